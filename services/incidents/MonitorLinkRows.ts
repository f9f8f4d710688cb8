import type { SqlClient } from "effect/sql"

/*
 * The ordered monitor links of an incident (`incident_monitors`) or a status page component
 * (`component_monitors`): two tables of one shape, written by one pair of statements.
 */

/** Which link table, and the column of its owner. */
export type MonitorLinkTable =
  | { readonly table: "incident_monitors"; readonly ownerColumn: "incident_id" }
  | { readonly table: "component_monitors"; readonly ownerColumn: "component_id" }

export const deleteMonitorLinks = (sql: SqlClient.SqlClient, link: MonitorLinkTable, ownerId: string) =>
  sql`DELETE FROM ${sql.literal(link.table)} WHERE ${sql.literal(link.ownerColumn)} = ${ownerId}`

/** Links the monitors in their order (`monitorIds` without repeats). */
export const insertMonitorLinks = (
  sql: SqlClient.SqlClient,
  link: MonitorLinkTable,
  ownerId: string,
  monitorIds: ReadonlyArray<string>
) => {
  const rows = JSON.stringify(monitorIds.map((monitorId, position) => ({ monitorId, position })))
  return sql`
    INSERT INTO ${sql.literal(link.table)} (${sql.literal(link.ownerColumn)}, monitor_id, position)
    SELECT ${ownerId}, r."monitorId", r.position FROM jsonb_to_recordset(${rows}::jsonb) AS r("monitorId" text, position int)`
}
