import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `storage_warnings` table: an organization's crossing of the storage warning line, and
 * every statement on it.
 */

const CrossedRow = Schema.Struct({ crossed_at: Schema.Date })

/** Records the crossing; answers its time where it is new, nothing where it was recorded already. */
export const recordStorageCrossing = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    INSERT INTO storage_warnings (org_id) VALUES (${orgId}) ON CONFLICT (org_id) DO NOTHING
    RETURNING crossed_at`.pipe(decodeRows(CrossedRow))

/** Re-arms the warning (the organization dropped below the line). */
export const clearStorageCrossing = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`DELETE FROM storage_warnings WHERE org_id = ${orgId}`
