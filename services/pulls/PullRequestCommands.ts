import { Context, Effect, Layer } from "effect"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { MergeBlocked, type MergeResult, type MergeStrategy } from "../../schemas/pulls/PullRequests.ts"
import { Repository } from "../git/RepositoryProtocol.ts"
import { type MergeActorPayload, PullRequest } from "./PullRequestProtocol.ts"

/** Merge packs a repository may pile up before it is compacted. */
const MERGE_PACKS_BEFORE_COMPACTION = 32

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
  /** Merges now or answers why not; afterwards lets the repository compact once merge packs pile up. */
  readonly merge: (
    pull: { readonly id: string; readonly repoId: string },
    request: MergeRequest
  ) => Effect.Effect<MergeResult, MergeBlocked | Conflict | NotFound>
}>()("canopy/pulls/PullRequestCommands") {
  static readonly layer = Layer.effect(
    PullRequestCommands,
    Effect.gen(function*() {
      const makeClient = yield* PullRequest.client
      const repositoryClient = yield* Repository.client
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
            ),
            // Each merge stores a small pack: let the repository compact once they pile up (a
            // full repack, so less often than after pushes).
            Effect.tap(() =>
              repositoryClient(pull.repoId).Compact({ minPacks: MERGE_PACKS_BEFORE_COMPACTION }).pipe(
                Effect.tapError((error) => Effect.logWarning("compaction failed", error)),
                Effect.ignore,
                Effect.forkDetach
              )
            )
          )
      })
    })
  )
}
