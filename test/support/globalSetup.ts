import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import { startEmbeddedPostgres } from "../../services/platform/EmbeddedPostgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    readonly postgresUrl: string
  }
}

/** Room the run may take in memory: about a hundred small databases and their WAL (1.9 GB at most seen). */
const memoryNeeded = 4 * 1024 ** 3

/**
 * Where the run keeps its throw-away files (its temp folder, its Postgres inside it): in memory
 * (`/dev/shm`, tmpfs) when the machine has one with room, else the OS temp folder. On disk the
 * run's Postgres alone cost about 26 s of 3 minutes (every commit's flush, the checkpoint at
 * stop, removing the files of a hundred databases). The same Postgres, git and files either way.
 */
const scratchParentFolder = (): string => {
  try {
    const stats = Fs.statfsSync("/dev/shm")
    Fs.accessSync("/dev/shm", Fs.constants.W_OK)
    if (stats.bavail * stats.bsize >= memoryNeeded) return "/dev/shm"
  } catch {
    // No /dev/shm (macOS, say): the temp folder.
  }
  return Os.tmpdir()
}

/**
 * Points the OS temp folder of the whole run (test files, the processes they start) at a
 * folder of its own, and at the end fails the run if a test left anything in it (data
 * folders hold master keys), then removes it.
 */
const privateTempFolder = () => {
  const folder = Fs.mkdtempSync(Path.join(scratchParentFolder(), "canopy-run-"))
  // Embedded Postgres (run as the postgres user under root) reads files it is given here.
  Fs.chmodSync(folder, 0o755)
  process.env.TMPDIR = folder
  return () => {
    const left = Fs.readdirSync(folder)
    // What each left folder holds names the test that left it.
    const described = left.map((name) => {
      const path = Path.join(folder, name)
      const inside = Fs.statSync(path).isDirectory() ? Fs.readdirSync(path, { recursive: true }).join(" ") : ""
      return inside === "" ? name : `${name} (${inside})`
    })
    Fs.rmSync(folder, { recursive: true, force: true })
    if (left.length > 0) throw new Error(`tests left these in the temp folder: ${described.join(", ")}`)
  }
}

/** One embedded Postgres for the whole run; every test file makes its own database in it. */
export default async function setup(project: TestProject) {
  const checkTempFolder = privateTempFolder()
  const external = process.env.TEST_DATABASE_URL
  if (external !== undefined) {
    project.provide("postgresUrl", external)
    return checkTempFolder
  }
  // Inside the run's temp folder (in memory when there is room), removed before that folder is checked.
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-test-"))
  Fs.chmodSync(dir, 0o755)
  const scope = Effect.runSync(Scope.make())
  const pg = await Effect.runPromise(
    startEmbeddedPostgres({ dataDir: Path.join(dir, "pg") }).pipe(Scope.provide(scope))
  )
  project.provide("postgresUrl", pg.url)
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
    checkTempFolder()
  }
}
