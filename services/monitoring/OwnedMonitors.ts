import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { FieldIssue } from "../../schemas/Monitoring.ts"

/**
 * The issues of a list of monitor ids that must all name monitors of `orgId` (incidents'
 * `affectedMonitors`, components' `monitorIds`): one per id that does not, at `field.<index>`.
 * Another organization's monitor reads as unknown, so nothing leaks.
 */
export const foreignMonitorIssues = (
  orgId: string,
  field: string,
  ids: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<FieldIssue>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    if (ids.length === 0) return []
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string }>`
      SELECT id FROM monitors WHERE org_id = ${orgId} AND id IN ${sql.in([...new Set(ids)])}`
    const known = new Set(rows.map((row) => row.id))
    return ids.flatMap((id, index) =>
      known.has(id) ? [] : [{ field: `${field}.${index}`, message: `'${id}' is not a monitor of this organization` }]
    )
  })

/** The ids without repeats, first occurrence kept. */
export const distinctIds = (ids: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(ids)]
