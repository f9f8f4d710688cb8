import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import { emptyWindow, type SamplingWindow } from "./Sampling.ts"

/*
 * The ingest entity's sampling window (`observe_ingest_windows`), written with each group
 * commit so a new host resumes it, and every statement on it (its one owner).
 */

const WindowRow = Schema.Struct({
  window_start: Int8,
  total: Schema.Int,
  kept: Schema.Int,
  previous_total: Schema.Int
})

/** The organization's last committed window; the empty one before its first commit. */
export const loadIngestWindow = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT window_start, total, kept, previous_total FROM observe_ingest_windows WHERE org_id = ${orgId}`.pipe(
    decodeRows(WindowRow),
    Effect.map((rows): SamplingWindow =>
      rows.length === 0 ? emptyWindow : {
        start: rows[0].window_start,
        total: rows[0].total,
        kept: rows[0].kept,
        previousTotal: rows[0].previous_total
      }
    )
  )

/** The ingest group commit's `sampling` CTE (`IngestWriter`): stores the commit's window. */
export const saveIngestWindowStatement = (sql: SqlClient.SqlClient, orgId: string, window: SamplingWindow) =>
  sql`
    -- Commits may finish out of order, so the window only moves forward.
    INSERT INTO observe_ingest_windows AS w (org_id, window_start, total, kept, previous_total)
    VALUES (${orgId}, ${window.start}, ${window.total}, ${window.kept}, ${window.previousTotal})
    ON CONFLICT (org_id) DO UPDATE SET window_start = EXCLUDED.window_start, total = EXCLUDED.total,
      kept = EXCLUDED.kept, previous_total = EXCLUDED.previous_total
    WHERE (EXCLUDED.window_start, EXCLUDED.total) > (w.window_start, w.total)`
