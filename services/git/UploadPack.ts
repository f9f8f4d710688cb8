import * as NodeStream from "@effect/platform-node/NodeStream"
import { Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import { spawn } from "node:child_process"
import type { Readable } from "node:stream"
import { gitEnv, runGit } from "./GitProcess.ts"
import { FLUSH, pkt } from "./PktLine.ts"
import { GitStorageError, RepoCache } from "./RepoCache.ts"
import type { RepoRecord } from "./Repositories.ts"

/** Only protocol settings git itself sends (`version=2`) pass from the client's `Git-Protocol` header. */
const protocolEnv = (gitProtocol: string | undefined): Record<string, string> =>
  gitProtocol !== undefined && /^[a-z0-9=:.]{1,100}$/i.test(gitProtocol) ? { GIT_PROTOCOL: gitProtocol } : {}

/**
 * The serving side of `git clone` / `fetch` / `pull`: `git upload-pack` over the runner's
 * cached copy, synced first, so negotiation (`multi_ack_detailed`, `no-done`), shallow
 * clones, filters, `ofs-delta`, side-band progress and protocol v2 are git's own.
 */
export class UploadPack extends Context.Service<UploadPack, {
  /** The body of `info/refs?service=git-upload-pack`. */
  advertise(repo: RepoRecord, gitProtocol: string | undefined): Effect.Effect<Buffer, GitStorageError>
  /** The response body of a `POST …/git-upload-pack` whose (decompressed) request body is `input`. */
  serve(
    repo: RepoRecord,
    gitProtocol: string | undefined,
    input: Readable
  ): Effect.Effect<Stream.Stream<Uint8Array, GitStorageError>, GitStorageError>
}>()("canopy/git/UploadPack") {
  static readonly layer = Layer.effect(
    UploadPack,
    Effect.gen(function*() {
      const cache = yield* RepoCache

      const advertise = Effect.fn("UploadPack.advertise")(function*(repo: RepoRecord, gitProtocol: string | undefined) {
        const env = protocolEnv(gitProtocol)
        const out = yield* cache.use(
          repo,
          (synced) =>
            runGit({
              gitDir: synced.dir,
              args: ["upload-pack", "--stateless-rpc", "--advertise-refs", synced.dir],
              env
            })
              .pipe(Effect.mapError((cause) => new GitStorageError({ message: "upload-pack failed", cause })))
        )
        // Protocol v2 starts with its own capability advertisement, without the service line.
        return env.GIT_PROTOCOL?.includes("version=2") === true
          ? out
          : Buffer.concat([pkt("# service=git-upload-pack\n"), FLUSH, out])
      })

      const serve = Effect.fn("UploadPack.serve")(
        function*(repo: RepoRecord, gitProtocol: string | undefined, input: Readable) {
          // The lease outlives this effect: it ends when the response stream does.
          const scope = yield* Scope.make()
          const synced = yield* cache.lease(repo).pipe(
            Scope.provide(scope),
            Effect.onError(() => Scope.close(scope, Exit.void))
          )
          const child = spawn("git", ["upload-pack", "--stateless-rpc", synced.dir], {
            env: gitEnv(synced.dir, protocolEnv(gitProtocol)),
            cwd: synced.dir
          })
          const stderr: Array<Buffer> = []
          child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
          child.stdin.on("error", () => undefined)
          input.on("error", () => child.stdin.destroy())
          input.pipe(child.stdin)
          const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
          return NodeStream.fromReadable<Uint8Array, GitStorageError>({
            evaluate: () => child.stdout,
            onError: (cause) => new GitStorageError({ message: "upload-pack output failed", cause })
          }).pipe(
            Stream.ensuring(Effect.gen(function*() {
              if (child.exitCode === null) child.kill()
              const code = yield* Effect.promise(() => exited)
              if (code !== 0 && code !== null) {
                yield* Effect.logWarning("upload-pack failed", Buffer.concat(stderr).toString("utf8").slice(0, 500))
              }
              yield* Scope.close(scope, Exit.void)
            }))
          )
        }
      )

      return UploadPack.of({ advertise, serve })
    })
  )
}
