import { Context, Effect, Layer } from "effect"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { MergeBlocked, type MergeResult, type MergeStrategy } from "../../schemas/pulls/PullRequests.ts"
import { type MergeActorPayload, PullRequest } from "./PullRequestProtocol.ts"

export interface MergeRequest {
  readonly actor: typeof MergeActorPayload.Type
  readonly strategy: MergeStrategy
  readonly commitMessage: string | null
  readonly deleteBranch: boolean
}

/**
 * What callers outside the cluster ask of a pull request's entity (GUIDE §11): re-evaluate
 * it, or merge it. The entity serialises merges and merge checks; this service is the one
 * way in, so the HTTP layer never talks to entities itself.
 */
export class PullRequestCommands extends Context.Service<PullRequestCommands, {
  /** Re-evaluates the pull request in its entity, without waiting (merge checks, auto-merge, stale timer). */
  readonly refresh: (
    prId: string,
    sender: { readonly id: string; readonly name: string } | null
  ) => Effect.Effect<void>
  /** Merges now or answers why not (the ref update nudges the repository's compaction). */
  readonly merge: (
    pull: { readonly id: string; readonly repoId: string },
    request: MergeRequest
  ) => Effect.Effect<MergeResult, MergeBlocked | Conflict | NotFound>
}>()("canopy/pulls/PullRequestCommands") {
  static readonly layer = Layer.effect(
    PullRequestCommands,
    Effect.gen(function*() {
      const makeClient = yield* PullRequest.client
      return PullRequestCommands.of({
        refresh: (prId, sender) =>
          makeClient(prId).Refresh({ sender }).pipe(
            Effect.catchCause((cause) => Effect.logWarning("PullRequest: refresh failed", cause)),
            Effect.forkDetach,
            Effect.asVoid
          ),
        merge: (pull, request) =>
          makeClient(pull.id).Merge(request).pipe(
            Effect.catch((error) =>
              error instanceof MergeBlocked || error instanceof Conflict || error instanceof NotFound
                ? Effect.fail(error)
                : Effect.die(error)
            )
          )
      })
    })
  )
}
