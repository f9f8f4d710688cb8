import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PassThrough, type Readable } from "node:stream"
import { finished } from "node:stream/promises"
import { GitWork } from "./GitWork.ts"
import { FLUSH, pkt, readUntilFlush, sideband, ZERO_SHA } from "./PktLine.ts"
import { indexPack, makeQuarantine, PackRejected, removeQuarantine } from "./Quarantine.ts"
import { type Pusher, type RefCommand, type RefResult, RefUpdateCheck, RefUpdates } from "./RefUpdates.ts"
import { RepoCache } from "./RepoCache.ts"
import type { RepoRecord } from "./Repositories.ts"
import { noteStorageStanding, storageStanding } from "./StorageQuota.ts"

/** What the server offers to `git push` (gitprotocol-capabilities). */
export const RECEIVE_CAPABILITIES =
  "report-status delete-refs side-band-64k quiet atomic ofs-delta object-format=sha1" +
  " agent=canopy/0.1"

/** The ref advertisement of `info/refs?service=git-receive-pack`, from the stored refs. */
export const receivePackAdvertisement = (refs: ReadonlyArray<{ readonly name: string; readonly sha: string }>) => {
  const lines = refs.length === 0
    ? [pkt(`${ZERO_SHA} capabilities^{}\0${RECEIVE_CAPABILITIES}\n`)]
    : refs.map((ref, i) => pkt(`${ref.sha} ${ref.name}${i === 0 ? `\0${RECEIVE_CAPABILITIES}` : ""}\n`))
  return Buffer.concat([pkt("# service=git-receive-pack\n"), FLUSH, ...lines, FLUSH])
}

/** Commands are at most this large in total (a push of tens of thousands of refs still fits). */
const MAX_COMMAND_BYTES = 16 * 1024 * 1024

interface ParsedRequest {
  readonly commands: ReadonlyArray<RefCommand>
  readonly capabilities: ReadonlySet<string>
  /** The pack that follows the commands. */
  readonly pack: Readable
}

/** Splits a receive-pack request into its commands and the pack stream behind them. */
const parseRequest = (input: Readable) =>
  Effect.callback<ParsedRequest, PackRejected>((resume) => {
    let buffer: Buffer = Buffer.alloc(0)
    const finish = (result: Effect.Effect<ParsedRequest, PackRejected>) => {
      input.off("data", onData)
      input.off("end", onEnd)
      input.off("error", onError)
      resume(result)
    }
    const tryParse = (ended: boolean) => {
      let read
      try {
        read = readUntilFlush(buffer)
      } catch (error) {
        return finish(Effect.fail(new PackRejected({ reason: String((error as Error).message) })))
      }
      if (read.end === undefined) {
        if (ended) finish(Effect.fail(new PackRejected({ reason: "request ended before its commands" })))
        else if (buffer.length > MAX_COMMAND_BYTES) {
          finish(Effect.fail(new PackRejected({ reason: "too many commands" })))
        }
        return
      }
      input.pause()
      const commands: Array<RefCommand> = []
      let capabilities = new Set<string>()
      for (const [i, raw] of read.lines.entries()) {
        let line = raw.toString("utf8")
        const nul = line.indexOf("\0")
        if (nul >= 0) {
          if (i === 0) capabilities = new Set(line.slice(nul + 1).trim().split(" ").filter((cap) => cap !== ""))
          line = line.slice(0, nul)
        }
        if (line.startsWith("shallow ")) continue
        const match = /^([0-9a-f]{40}) ([0-9a-f]{40}) (\S+)\n?$/.exec(line)
        if (match === null) {
          return finish(Effect.fail(new PackRejected({ reason: `malformed command ${JSON.stringify(line)}` })))
        }
        commands.push({ oldSha: match[1], newSha: match[2], name: match[3] })
      }
      const pack = new PassThrough()
      pack.write(buffer.subarray(read.end))
      if (ended) pack.end()
      else input.pipe(pack)
      input.on("error", (error) => pack.destroy(error))
      finish(Effect.succeed({ commands, capabilities, pack }))
    }
    const onData = (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
      tryParse(false)
    }
    const onEnd = () => tryParse(true)
    const onError = (error: Error) => finish(Effect.fail(new PackRejected({ reason: error.message })))
    input.on("data", onData)
    input.on("end", onEnd)
    input.on("error", onError)
  })

/** Reads a pack nobody will index to its end, so the client has sent it all when it gets the answer. */
const drain = (pack: Readable) =>
  Effect.promise(() => {
    pack.resume()
    return finished(pack).catch(() => undefined)
  })

/** The report-status answer, on side-band 1 when the client asked for side-band-64k. */
const report = (
  capabilities: ReadonlySet<string>,
  unpack: string,
  results: ReadonlyArray<RefResult>,
  messages: ReadonlyArray<string>
) => {
  const status = Buffer.concat([
    pkt(`unpack ${unpack}\n`),
    ...results.map((r) => pkt(r.ok ? `ok ${r.name}\n` : `ng ${r.name} ${r.reason ?? "rejected"}\n`)),
    FLUSH
  ])
  if (!capabilities.has("side-band-64k")) return capabilities.has("report-status") ? status : Buffer.alloc(0)
  const progress = messages.map((message) => sideband(2, Buffer.from(`${message}\n`)))
  return Buffer.concat([...progress, sideband(1, status), FLUSH])
}

/**
 * The receiving side of `git push` over smart HTTP: parses the commands, indexes the pack
 * into a quarantine next to the runner's cached copy, and hands both to `RefUpdates`. A
 * malformed, truncated or corrupt pack refuses every ref (`unpack <reason>`) and changes
 * nothing.
 */
export class ReceivePack extends Context.Service<ReceivePack, {
  /** Answers a `POST …/git-receive-pack` whose (decompressed) body is `input`. */
  handle(repo: RepoRecord, pusher: Pusher | null, input: Readable): Effect.Effect<Buffer>
}>()("canopy/git/ReceivePack") {
  static readonly layer = Layer.effect(
    ReceivePack,
    Effect.gen(function*() {
      const cache = yield* RepoCache
      const refUpdates = yield* RefUpdates
      const sql = yield* SqlClient.SqlClient
      const work = yield* GitWork

      const handle = Effect.fn("ReceivePack.handle")(
        function*(repo: RepoRecord, pusher: Pusher | null, input: Readable) {
          const parsed = yield* parseRequest(input).pipe(Effect.result)
          if (parsed._tag === "Failure") {
            return report(new Set(["report-status"]), parsed.failure.reason, [], [])
          }
          const { capabilities, commands, pack } = parsed.success
          // The checks' lookups (branch protection's queries) run while the pack is received and indexed.
          const hook = yield* RefUpdateCheck
          const check = hook.prepare === undefined || repo.archived
            ? hook
            : yield* hook.prepare({ repo, commands, pusher })
          const messages: Array<string> = []
          if (repo.archived) messages.push("Canopy: this repository is archived; pushes are refused.")
          const storage = yield* storageStanding(repo.orgId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          if (storage.blocked) {
            messages.push("Canopy: storage quota reached; pushes are refused until space is freed or the plan changes.")
            const refused = commands.map((c) => ({ name: c.name, ok: false, reason: "storage quota exceeded" }))
            yield* drain(pack)
            return report(capabilities, "ok", refused, messages)
          }
          if (storage.warning !== undefined) messages.push(`Canopy: warning: ${storage.warning}.`)
          // One e-mail to the owners per crossing of the warning line.
          yield* noteStorageStanding(repo.orgId, storage).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          const outcome = yield* cache.use(repo, (synced) =>
            Effect.acquireUseRelease(
              Effect.map(cache.tempDir(), (dir) => makeQuarantine(synced.dir, dir)),
              (empty) =>
                Effect.gen(function*() {
                  // Only deletions: the client sends no pack.
                  const quarantine = commands.some((c) => c.newSha !== ZERO_SHA) && !repo.archived
                    ? yield* work.heavy(indexPack(synced.dir, empty, pack))
                    : yield* Effect.as(drain(pack), empty)
                  return yield* refUpdates.update({
                    repo,
                    dir: synced.dir,
                    quarantine,
                    commands,
                    atomic: capabilities.has("atomic"),
                    pusher,
                    check
                  })
                }),
              removeQuarantine
            )).pipe(Effect.result)
          if (outcome._tag === "Success") {
            // Each refusal is also said on the progress channel, where git shows it as "remote: …".
            for (const result of outcome.success.results) {
              if (!result.ok && !repo.archived) messages.push(`Canopy: ${result.name} refused: ${result.reason}`)
            }
            messages.push(...outcome.success.notices)
            return report(capabilities, "ok", outcome.success.results, messages)
          }
          const error = outcome.failure
          const reason = error._tag === "PackRejected" ? error.reason : "storage failure"
          if (error._tag === "GitStorageError") yield* Effect.logError("push could not be stored", error)
          const unpack = reason.replace(/\s+/g, " ").slice(0, 200)
          const refused = commands.map((c) => ({ name: c.name, ok: false, reason: "unpacker error" }))
          return report(capabilities, unpack, refused, [`Canopy: push refused: ${unpack}`])
        }
      )

      return ReceivePack.of({ handle })
    })
  )
}
