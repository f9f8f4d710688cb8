import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { ping } from "../../../services/platform/Database.ts"
import { CanopyApi } from "../Api.ts"
import { builtOn } from "../ApiRequestContext.ts"

export const SystemHandlers = HttpApiBuilder.group(
  CanopyApi,
  "system",
  Effect.fn(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    return handlers.handleAll({
      healthz: () => Effect.succeed({ status: "ok" }),
      // The server only listens once migrations ran and the cluster joined, so being
      // reachable means both; the query checks that Postgres still answers.
      readyz: () =>
        ping(sql).pipe(
          Effect.timeout("2 seconds"),
          Effect.as({ status: "ready" }),
          Effect.catchCause(() => Effect.fail({ status: "unavailable" }))
        )
    })
  })
).pipe(
  // Probed often (load balancers, orchestrators): merges one service into each request, not the app's.
  builtOn(SqlClient.SqlClient)
)
