import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Int8, orDieOnSchema } from "../platform/Rows.ts"
import type { RateWindow } from "./RateWindow.ts"

/** A row as selected below. */
const StoredWindow = Schema.Struct({ start: Int8, used: Schema.Int })

/**
 * The durable copy of each organization's request window (`org_rate_windows`): the
 * organization entity loads it when it starts and writes it back while it runs, so a new
 * host resumes the count after a failover. The one owner of that table's SQL.
 */
export class RateWindows extends Context.Service<RateWindows, {
  load(orgId: string): Effect.Effect<Option.Option<RateWindow>, SqlError>
  save(orgId: string, window: RateWindow): Effect.Effect<void, SqlError>
}>()("canopy/ratelimits/RateWindows") {
  static readonly layer = Layer.effect(
    RateWindows,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const load = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: StoredWindow,
        execute: (orgId) => sql`SELECT window_start AS start, used FROM org_rate_windows WHERE org_id = ${orgId}`
      })
      return RateWindows.of({
        load: (orgId) => orDieOnSchema(load(orgId)),
        save: (orgId, { start, used }) =>
          sql`
            INSERT INTO org_rate_windows (org_id, window_start, used) VALUES (${orgId}, ${start}, ${used})
            ON CONFLICT (org_id) DO UPDATE SET window_start = EXCLUDED.window_start, used = EXCLUDED.used`.pipe(
            Effect.asVoid
          )
      })
    })
  )
}
