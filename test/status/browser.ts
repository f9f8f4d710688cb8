import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { chromium } from "playwright-core"
import type { BrowserContext } from "playwright-core"

/** Debian's chromium, headless, driven by playwright-core, with a fresh profile; closed with the scope. */
export const launchChromium = (viewport: { width: number; height: number } = { width: 1280, height: 900 }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const profile = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-chromium-"))
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: "/usr/bin/chromium",
        headless: true,
        viewport,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync"
        ]
      })
      return { context, profile }
    }),
    ({ context, profile }) =>
      Effect.promise(async () => {
        await context.close()
        Fs.rmSync(profile, { recursive: true, force: true })
      })
  ).pipe(Effect.map(({ context }): BrowserContext => context))

/** Where screenshots go (ignored by git). */
export const artifactPath = (name: string) => {
  const dir = Path.resolve(import.meta.dirname, "..", "artifacts")
  Fs.mkdirSync(dir, { recursive: true })
  return Path.join(dir, name)
}
