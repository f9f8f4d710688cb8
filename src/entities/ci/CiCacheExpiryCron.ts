import { Clock, Cron, Effect } from "effect"
import { ClusterCron } from "effect/cluster"
import { CiCaches } from "../../../services/ci/CiCaches.ts"

/** Hourly (at :29) on one runner: CI caches unused for 7 days are deleted (GUIDE §14 "Caches"). */
export const CiCacheExpiryCron = ClusterCron.make({
  name: "ci/ExpireCaches",
  cron: Cron.parseUnsafe("29 * * * *"),
  execute: Effect.gen(function*() {
    const caches = yield* CiCaches
    const deleted = yield* caches.expire(yield* Clock.currentTimeMillis)
    if (deleted > 0) yield* Effect.logInfo(`CI: deleted ${deleted} caches unused for 7 days`)
  })
})
