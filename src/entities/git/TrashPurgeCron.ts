import { Clock, Cron, Effect } from "effect"
import { ClusterCron } from "effect/cluster"
import { RepositoryLifecycle } from "../../../services/git/RepositoryLifecycle.ts"

/** Hourly (at :43) on one runner: repositories in the trash for 30 days are purged (GUIDE §16). */
export const TrashPurgeCron = ClusterCron.make({
  name: "git/PurgeTrash",
  cron: Cron.parseUnsafe("43 * * * *"),
  execute: Effect.gen(function*() {
    const lifecycle = yield* RepositoryLifecycle
    const purged = yield* lifecycle.purgeDue(yield* Clock.currentTimeMillis)
    if (purged > 0) yield* Effect.logInfo(`Purged ${purged} repositories 30 days after their deletion`)
  })
})
