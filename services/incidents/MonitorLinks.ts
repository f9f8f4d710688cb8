import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { FieldIssue } from "../../schemas/monitors/Monitors.ts"
import type { MonitorRepository } from "../monitors/MonitorRepository.ts"

/**
 * The issues of a list of monitor ids that must all name monitors of `orgId` (incidents'
 * `affectedMonitors`, components' `monitorIds`): one per id that does not, at `field.<index>`.
 * Another organization's monitor reads as unknown, so nothing leaks.
 */
export const foreignMonitorIssues = (
  monitors: MonitorRepository["Service"],
  orgId: string,
  field: string,
  ids: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<FieldIssue>, SqlError> =>
  Effect.gen(function*() {
    const known = yield* monitors.ownedIds(orgId, ids)
    return ids.flatMap((id, index) =>
      known.has(id) ? [] : [{ field: `${field}.${index}`, message: `'${id}' is not a monitor of this organization` }]
    )
  })

/**
 * Replaces the ordered monitor links of an incident or a component with `monitorIds` (repeats
 * dropped, first occurrence kept). Run it in the transaction that changes the owner.
 */
export const replaceMonitorLinks = (
  link:
    | { readonly table: "incident_monitors"; readonly ownerColumn: "incident_id" }
    | { readonly table: "component_monitors"; readonly ownerColumn: "component_id" },
  ownerId: string,
  monitorIds: ReadonlyArray<string>
): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = sql.literal(link.table)
    const owner = sql.literal(link.ownerColumn)
    yield* sql`DELETE FROM ${table} WHERE ${owner} = ${ownerId}`
    const distinct = [...new Set(monitorIds)]
    if (distinct.length === 0) return
    const rows = JSON.stringify(distinct.map((monitorId, position) => ({ monitorId, position })))
    yield* sql`
      INSERT INTO ${table} (${owner}, monitor_id, position)
      SELECT ${ownerId}, r."monitorId", r.position FROM jsonb_to_recordset(${rows}::jsonb) AS r("monitorId" text, position int)`
  })
