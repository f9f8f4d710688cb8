import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Queue } from "effect"
import { Singleton } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { CI_SHARD_GROUP, CiQueue } from "../../../services/ci/CiQueueProtocol.ts"
import { CI_CHANNEL, claimableOrganizations } from "../../../services/ci/CiRunRows.ts"
import { restartOnFailure } from "../../../services/platform/RestartOnFailure.ts"
import * as RunnerAlarms from "../RunnerAlarms.ts"
import { CiExecutions } from "./CiExecutions.ts"

/** How often the `ci` sweep wakes every organization with a claimable run. */
const SWEEP_EVERY = Duration.seconds(2)
/** Organizations woken per sweep (oldest queued run first); the rest at the next one. */
const SWEEP_LIMIT = 500

/**
 * What wakes the organizations' `CiQueue` entities (GUIDE §14):
 * - on each runner that executes CI, `LISTEN canopy_ci`: a run was queued or completed (the
 *   NOTIFY commits with it and names the organization), and the runner hosting that
 *   organization's queue wakes it at once — the hot path from push to job;
 * - a singleton in the `ci` shard group (so only on a CI worker) that every 2 s wakes every
 *   organization with a claimable run, wherever its queue lives: after a restart, a moved
 *   shard, a lost notification, or a worker joining a cluster that had none.
 */
export const CiQueueWaker = Layer.unwrap(Effect.gen(function*() {
  const executions = yield* CiExecutions
  const wake = executions.wake

  const sweep = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* Effect.andThen(
      Effect.flatMap(
        claimableOrganizations(sql, SWEEP_LIMIT),
        (orgs) => Effect.forEach(orgs, wake, { concurrency: 8, discard: true })
      ),
      Effect.sleep(SWEEP_EVERY)
    ).pipe(Effect.forever, restartOnFailure("CI: queue sweep failed"))
  })
  const Sweep = Singleton.make("ci/QueueSweep", sweep, { shardGroup: CI_SHARD_GROUP })

  if (!executions.executes) return Sweep

  const Listen = Layer.effectDiscard(Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const hostedHere = yield* RunnerAlarms.hostedHere(CiQueue)
    yield* Effect.scoped(Effect.gen(function*() {
      const notifications = yield* pg.listen(CI_CHANNEL)
      while (true) {
        const batch = yield* Queue.takeAll(notifications)
        const orgs = new Set(batch.map((notification) => notification.payload))
        yield* Effect.forEach(
          [...orgs].filter((orgId) => orgId !== "" && hostedHere(orgId)),
          wake,
          { concurrency: 8, discard: true }
        )
      }
    })).pipe(restartOnFailure("CI: LISTEN failed, reconnecting"), Effect.forkScoped)
  }))
  return Layer.merge(Sweep, Listen)
}))
