import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { SourceMapRecord } from "../../schemas/observe/SourceMaps.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The records of uploaded source maps (`source_maps`; the maps themselves are in the
 * BlobStore) and every statement on them (their one owner).
 */

const SourceMapRow = Schema.Struct({
  id: Schema.String,
  release: Schema.String,
  name: Schema.String,
  size: Schema.Int,
  created_at: Schema.Date
})
type SourceMapRow = typeof SourceMapRow.Type

const toRecord = (row: SourceMapRow): SourceMapRecord => ({
  id: row.id,
  filename: row.name,
  release: row.release,
  size: row.size,
  createdAt: row.created_at.toISOString()
})

const MapName = Schema.Struct({ id: Schema.String, name: Schema.String })
const Upserted = Schema.Struct({ ...SourceMapRow.fields, replaced: Schema.NullOr(Schema.String) })
const PageRow = Schema.Struct({ ...SourceMapRow.fields, total: Int8 })
const Total = Schema.Struct({ total: Int8 })
const Removed = Schema.Struct({ release: Schema.String, blob_key: Schema.String })

/** The names and ids of the maps of one org × release. */
export const mapNamesOfRelease = (sql: SqlClient.SqlClient, orgId: string, release: string) =>
  sql`
    SELECT id, name FROM source_maps WHERE org_id = ${orgId} AND release = ${release}`.pipe(decodeRows(MapName))

/**
 * Records a map, replacing the one of the same release and name; the record, and the blob
 * key of the replaced map (null if none).
 */
export const upsertSourceMap = (
  sql: SqlClient.SqlClient,
  map: {
    readonly id: string
    readonly orgId: string
    readonly release: string
    readonly name: string
    readonly size: number
    readonly blobKey: string
  }
) =>
  // RETURNING's sub-select sees the row as it was before this statement: the replaced map.
  sql`
    INSERT INTO source_maps (id, org_id, release, name, size, blob_key)
    VALUES (${map.id}, ${map.orgId}, ${map.release}, ${map.name}, ${map.size}, ${map.blobKey})
    ON CONFLICT (org_id, release, name) DO UPDATE SET
      id = excluded.id, size = excluded.size, blob_key = excluded.blob_key, created_at = now()
    RETURNING id, release, name, size, created_at,
      (SELECT old.blob_key FROM source_maps old
        WHERE old.org_id = ${map.orgId} AND old.release = ${map.release} AND old.name = ${map.name}) AS replaced`
    .pipe(
      decodeRows(Upserted),
      Effect.map(([row]) => ({ record: toRecord(row), replaced: row.replaced }))
    )

/** A page of an organization's maps (of one release, if given), newest first, and how many match. */
export const sourceMapPage = (
  sql: SqlClient.SqlClient,
  orgId: string,
  query: { readonly release: string | undefined; readonly limit: number; readonly offset: number }
) =>
  Effect.gen(function*() {
    const release = query.release === undefined ? sql.literal("") : sql`AND release = ${query.release}`
    const rows = yield* sql`
      SELECT id, release, name, size, created_at, count(*) OVER () AS total
      FROM source_maps WHERE org_id = ${orgId} ${release}
      ORDER BY created_at DESC, id
      LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(decodeRows(PageRow))
    let count = rows.length === 0 ? 0 : rows[0].total
    if (rows.length === 0 && query.offset > 0) {
      const [total] = yield* sql`
        SELECT count(*) AS total FROM source_maps WHERE org_id = ${orgId} ${release}`.pipe(decodeRows(Total))
      count = total.total
    }
    return { sourceMaps: rows.map(toRecord), count }
  })

export const findSourceMap = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`
    SELECT id, release, name, size, created_at FROM source_maps WHERE org_id = ${orgId} AND id = ${id}`.pipe(
    decodeRows(SourceMapRow),
    Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toRecord))
  )

/** Deletes a map's record; its release and blob key, if it existed. */
export const deleteSourceMap = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`
    DELETE FROM source_maps WHERE org_id = ${orgId} AND id = ${id} RETURNING release, blob_key`.pipe(
    decodeRows(Removed),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )
