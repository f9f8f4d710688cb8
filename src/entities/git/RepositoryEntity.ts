import { Effect } from "effect"
import { Entity } from "effect/cluster"
import { Compaction } from "../../../services/git/Compaction.ts"
import { Repository } from "../../../services/git/RepositoryProtocol.ts"

const describe = (error: { readonly message: string }) => error.message

export const RepositoryEntityLayer = Repository.toLayer(
  Effect.gen(function*() {
    const repoId = (yield* Entity.CurrentAddress).entityId
    const compaction = yield* Compaction
    return Repository.of({
      Compact: ({ payload }) => compaction.compact(repoId, payload.minPacks).pipe(Effect.mapError(describe)),
      WarmUp: () => compaction.warmUp(repoId).pipe(Effect.mapError(describe)),
      RecountStorage: () => compaction.recount(repoId)
    })
  }),
  { maxIdleTime: "5 minutes" }
)
