import * as NodeStream from "@effect/platform-node/NodeStream"
import { Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import type { Readable } from "node:stream"
import { runGit, spawnGit } from "./GitProcess.ts"
import { FLUSH, pkt } from "./PktLine.ts"
import { GitStorageError, RepoCache } from "./RepoCache.ts"
import type { RepoRecord } from "./Repositories.ts"

/** Only protocol settings git itself sends (`version=2`) pass from the client's `Git-Protocol` header. */
/** A fetch or clone may stream for long; past this its git is killed. */
const UPLOAD_PACK_TIMEOUT_MS = 60 * 60_000

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
          // A clone of a large repository streams for a while: a long timeout, still a bound.
          const git = spawnGit({
            gitDir: synced.dir,
            args: ["upload-pack", "--stateless-rpc", synced.dir],
            env: protocolEnv(gitProtocol)
          }, UPLOAD_PACK_TIMEOUT_MS)
          const stderr: Array<Buffer> = []
          git.child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
          input.on("error", () => git.child.stdin.destroy())
          input.pipe(git.child.stdin)
          return NodeStream.fromReadable<Uint8Array, GitStorageError>({
            evaluate: () => git.child.stdout,
            onError: (cause) => new GitStorageError({ message: "upload-pack output failed", cause })
          }).pipe(
            // Done, failed or abandoned by the client: git and what it started (pack-objects) go.
            Stream.ensuring(Effect.gen(function*() {
              git.kill()
              const code = yield* Effect.promise(() => git.exited)
              if (git.timedOut()) yield* Effect.logWarning("upload-pack timed out")
              else if (code !== 0 && code !== null) {
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
