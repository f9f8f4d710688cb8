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

/** One embedded Postgres for the whole run; every test file makes its own database in it. */
export default async function setup(project: TestProject) {
  const external = process.env.TEST_DATABASE_URL
  if (external !== undefined) {
    project.provide("postgresUrl", external)
    return
  }
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
  }
}
