import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { FieldIssue } from "../../schemas/monitors/Monitors.ts"
import type { MonitorRepository } from "../monitors/MonitorRepository.ts"
import { deleteMonitorLinks, insertMonitorLinks, type MonitorLinkTable } from "./MonitorLinkRows.ts"

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
  link: MonitorLinkTable,
  ownerId: string,
  monitorIds: ReadonlyArray<string>
): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* deleteMonitorLinks(sql, link, ownerId)
    const distinct = [...new Set(monitorIds)]
    if (distinct.length === 0) return
    yield* insertMonitorLinks(sql, link, ownerId, distinct)
  })
