import { Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { Int8 } from "../platform/Rows.ts"
import type { RateWindow } from "./RateWindow.ts"

/*
 * The `org_rate_windows` table: its row and every statement on it.
 */

/** A row as selected below. */
const StoredWindow = Schema.Struct({ start: Int8, used: Schema.Int })

/** The organization's stored window, if any (a row that does not decode fails with a SchemaError). */
export const findRateWindow = (sql: SqlClient.SqlClient) =>
  SqlSchema.findOneOption({
    Request: Schema.String,
    Result: StoredWindow,
    execute: (orgId) => sql`SELECT window_start AS start, used FROM org_rate_windows WHERE org_id = ${orgId}`
  })

export const upsertRateWindow = (sql: SqlClient.SqlClient, orgId: string, { start, used }: RateWindow) =>
  sql`
    INSERT INTO org_rate_windows (org_id, window_start, used) VALUES (${orgId}, ${start}, ${used})
    ON CONFLICT (org_id) DO UPDATE SET window_start = EXCLUDED.window_start, used = EXCLUDED.used`
