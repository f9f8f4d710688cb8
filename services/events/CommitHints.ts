import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"

/**
 * Commit hints: the NOTIFY that wakes every runner after a publishing commit also names the
 * organizations and event types it appended ("<orgId> <type>" lines). A reader of the
 * ordered outbox only sees an event once every older transaction anywhere has ended (the
 * horizon, `EventLog.ts`), which under load can be hundreds of milliseconds behind the
 * commit; a hint arrives with the commit itself. Hints are for caches that only need to know
 * *that* something changed (drop, recompute): no order, no data, and they can be missing
 * (too many to fit a notification, a publisher that notifies after commit without them, a
 * lost LISTEN connection), so such a cache still listens to the ordered events too.
 */
export interface CommitHint {
  readonly orgId: string
  readonly type: string
}

/** Postgres caps a payload below 8000 bytes; a larger set of hints is sent as none. */
const MAX_PAYLOAD = 7000

/**
 * The NOTIFY payload for the rows of the CTE named `appended` (columns `org_id`, `type`),
 * as an SQL expression over `FROM appended` (aggregated, so one row).
 */
export const hintsPayloadSql = (sql: SqlClient.SqlClient, appended: string): Statement.Fragment =>
  sql`(SELECT CASE WHEN length(h.p) <= ${MAX_PAYLOAD} THEN h.p ELSE '' END
    FROM (SELECT coalesce(string_agg(DISTINCT a.org_id || ' ' || a.type, E'\n'), '') AS p FROM ${
    sql(appended)
  } a) AS h)`

/** The hints a notification's payload carries (none for an empty or foreign payload). */
export const parseHints = (payload: string): ReadonlyArray<CommitHint> => {
  if (payload === "") return []
  const hints: Array<CommitHint> = []
  for (const line of payload.split("\n")) {
    const space = line.indexOf(" ")
    if (space > 0 && space < line.length - 1) hints.push({ orgId: line.slice(0, space), type: line.slice(space + 1) })
  }
  return hints
}
