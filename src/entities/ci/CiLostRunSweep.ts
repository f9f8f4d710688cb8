import { Config, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { lostRuns } from "../../../services/ci/CiRunRows.ts"
import { RunExecution } from "../../../services/ci/RunExecution.ts"
import { restartOnFailure } from "../../../services/platform/RestartOnFailure.ts"

const SWEEP_EVERY = Duration.seconds(5)

/**
 * On every runner, workers or not: runs whose runner went silent for `CI_RUNNER_LOST_SECONDS`
 * (default 30) end `error` ("Runner lost"), never `running` forever — also when the lost
 * runner was the cluster's last CI worker. Completing one notifies its organization's queue,
 * whose next run may then start.
 */
export const CiLostRunSweep = Layer.effectDiscard(Effect.gen(function*() {
  const lostAfter = yield* Config.Int("CI_RUNNER_LOST_SECONDS").pipe(Config.withDefault(30))
  const sql = yield* SqlClient.SqlClient
  const execution = yield* RunExecution
  yield* Effect.andThen(
    Effect.flatMap(
      lostRuns(sql, lostAfter),
      (ids) =>
        Effect.forEach(ids, (id) => execution.abandon(id, "Runner lost: the job's runner stopped answering"), {
          discard: true
        })
    ),
    Effect.sleep(SWEEP_EVERY)
  ).pipe(restartOnFailure("CI: runner-lost sweep failed"), Effect.forkScoped)
}))
