import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { freePort } from "../../services/platform/EmbeddedPostgres.ts"
import { bootstrapOrg, request, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"
import { cloneUrl, gitClient, writeFiles } from "./gitClient.ts"

/**
 * Two runners of one cluster (multi-runner mode, each its own runner address): two apps on one
 * database without it are two "single" runners that both claim the one default runner
 * address, and stopping them could hang for minutes (each releases shards the other holds).
 */
const runnerOn = (dataDir: string) =>
  Effect.map(Effect.promise(freePort), (port) => ({
    dataDir,
    runnerAddress: Option.some({ host: "127.0.0.1", port }),
    runnerListenAddress: Option.none()
  }))

/** A data folder whose `blobs` is the shared object store (each runner keeps its own git cache). */
const dataDirSharing = (blobs: string) =>
  Effect.tap(tempDir("canopy-runner-"), (dir) => Effect.sync(() => Fs.symlinkSync(blobs, Path.join(dir, "blobs"))))

it.effect("a push through one runner is seen by a clone through another", () =>
  Effect.gen(function*() {
    const url = yield* createTestDatabase
    const blobs = yield* tempDir("canopy-shared-blobs-")
    const first = yield* startAppOnDatabase(url, yield* runnerOn(yield* dataDirSharing(blobs)))
    const second = yield* startAppOnDatabase(url, yield* runnerOn(yield* dataDirSharing(blobs)))
    const org = yield* bootstrapOrg(first.baseUrl, { slug: "two-runners", plan: "enterprise" })
    const created = yield* request(`${first.baseUrl}/api/v1/code/repos`, {
      method: "POST",
      token: org.key,
      body: { name: "shared" }
    })
    expect(created.status).toBe(201)

    const git = yield* gitClient
    const work = git.dir("work")
    yield* git.ok(["init", "-q", work])
    for (let round = 0; round < 2; round++) {
      yield* writeFiles(work, { [`round-${round}.txt`]: `${round}\n` })
      yield* git.ok(["add", "-A"], { cwd: work })
      yield* git.ok(["commit", "-q", "-m", `round ${round}`], { cwd: work })
      yield* git.ok(["push", cloneUrl(first.baseUrl, "two-runners", "shared", org.key), "main"], { cwd: work })
      const target = git.dir(`clone-${round}`)
      // The second runner has never seen this pack: it fetches it from the shared store.
      yield* git.ok(["clone", "-q", cloneUrl(second.baseUrl, "two-runners", "shared", org.key), target])
      expect(yield* git.ok(["rev-parse", "HEAD"], { cwd: target })).toBe(
        yield* git.ok(["rev-parse", "HEAD"], { cwd: work })
      )
      expect(Fs.readFileSync(Path.join(target, `round-${round}.txt`), "utf8")).toBe(`${round}\n`)
    }
  }), { timeout: 120_000 })
