import { Context, Effect, Layer, type Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { orDieOnSchema } from "../platform/Rows.ts"
import type { RateWindow } from "./RateWindow.ts"
import { findRateWindow, upsertRateWindow } from "./RateWindowRows.ts"

/**
 * The durable copy of each organization's request window (`org_rate_windows`): the
 * organization entity loads it when it starts and writes it back while it runs, so a new
 * host resumes the count after a failover. The one owner of that table's statements.
 */
export class RateWindows extends Context.Service<RateWindows, {
  load(orgId: string): Effect.Effect<Option.Option<RateWindow>, SqlError>
  save(orgId: string, window: RateWindow): Effect.Effect<void, SqlError>
}>()("canopy/ratelimits/RateWindows") {
  static readonly layer = Layer.effect(
    RateWindows,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const load = findRateWindow(sql)
      return RateWindows.of({
        load: (orgId) => orDieOnSchema(load(orgId)),
        save: (orgId, window) => upsertRateWindow(sql, orgId, window).pipe(Effect.asVoid)
      })
    })
  )
}
