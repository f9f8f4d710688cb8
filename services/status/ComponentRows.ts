import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { Component, CreateComponent, UpdateComponent } from "../../schemas/status/Components.ts"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `components` table: its rows (with their monitor links joined) and every statement on
 * it (`Components` is its one owner). Each takes the caller's `SqlClient`, so it runs in the
 * caller's transaction. The links (`component_monitors`) are written by `replaceMonitorLinks`.
 */

/** A component row with its monitors (`json_agg`, in their order). */
export const ComponentRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  position: Schema.Int,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  monitor_ids: Schema.Array(Schema.String)
})
export type ComponentRow = typeof ComponentRow.Type

export const toComponent = (row: ComponentRow): Component => ({
  id: row.id,
  name: row.name,
  description: row.description,
  monitorIds: row.monitor_ids,
  position: row.position,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

/** The organization's components (or the one `id`), by position, then creation. */
export const selectComponents = (sql: SqlClient.SqlClient, orgId: string, id?: string) =>
  sql`
    SELECT c.id, c.name, c.description, c.position, c.created_at, c.updated_at,
      coalesce((
        SELECT json_agg(cm.monitor_id ORDER BY cm.position) FROM component_monitors cm WHERE cm.component_id = c.id
      ), '[]'::json) AS monitor_ids
    FROM components c
    WHERE c.org_id = ${orgId} ${id === undefined ? sql.literal("") : sql`AND c.id = ${id}`}
    ORDER BY c.position, c.created_at, c.id`.pipe(decodeRows(ComponentRow))

const IdRow = Schema.Struct({ id: Schema.String })

/** Which of `componentIds` (not empty) are components of the organization. */
export const ownedComponentIds = (sql: SqlClient.SqlClient, orgId: string, componentIds: ReadonlyArray<string>) =>
  sql`SELECT id FROM components WHERE org_id = ${orgId} AND id IN ${sql.in([...componentIds])}`.pipe(
    decodeRows(IdRow),
    Effect.map((rows) => new Set(rows.map((row) => row.id)))
  )

/** The organization's components that contain any of `monitorIds` (not empty). */
export const componentsWithMonitors = (sql: SqlClient.SqlClient, orgId: string, monitorIds: ReadonlyArray<string>) =>
  sql`
    SELECT DISTINCT cm.component_id AS id FROM component_monitors cm JOIN components c ON c.id = cm.component_id
    WHERE c.org_id = ${orgId} AND cm.monitor_id IN ${sql.in([...monitorIds])}`.pipe(
    decodeRows(IdRow),
    Effect.map((rows) => new Set(rows.map((row) => row.id)))
  )

/** Inserts a component, last when no `position` is given. */
export const insertComponent = (
  sql: SqlClient.SqlClient,
  id: string,
  orgId: string,
  input: CreateComponent,
  at: string
) =>
  sql`
    INSERT INTO components (id, org_id, name, description, position, created_at, updated_at)
    VALUES (${id}, ${orgId}, ${input.name}, ${input.description ?? null},
      ${input.position ?? sql`(SELECT coalesce(max(position) + 1, 0) FROM components WHERE org_id = ${orgId})`},
      ${at}::timestamptz, ${at}::timestamptz)`

/** Locks the component for the rest of the transaction (no row: not found). */
export const lockComponent = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`SELECT 1 FROM components WHERE id = ${id} AND org_id = ${orgId} FOR UPDATE`

/** Sets the fields of `patch` that are given (the others keep their value) and `updated_at`. */
export const updateComponent = (sql: SqlClient.SqlClient, id: string, patch: UpdateComponent, at: string) =>
  sql`
    UPDATE components SET
      name = ${patch.name ?? sql`name`},
      description = ${patch.description !== undefined ? patch.description : sql`description`},
      position = ${patch.position ?? sql`position`},
      updated_at = ${at}::timestamptz
    WHERE id = ${id}`

/** Deletes the component (its monitor links go with it); the rows deleted. */
export const deleteComponent = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`DELETE FROM components WHERE id = ${id} AND org_id = ${orgId} RETURNING id`
