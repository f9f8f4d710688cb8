import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `domain_events` outbox table: its rows and every statement on it (how readers use
 * `(tx, id)` and the horizon: `EventLog.ts`; publishing: `Events.ts`; retention:
 * `EventRetention.ts`). Rows must only ever be inserted by these statements (`tx` is the
 * column's default).
 */

/** The NOTIFY channel that wakes every runner when events commit. */
export const EVENTS_CHANNEL = "canopy_events"

/** An event to publish. `data` must be JSON-serialisable; `undefined` is stored as `null`. */
export interface NewDomainEvent {
  readonly type: string
  readonly orgId?: string | null | undefined
  readonly data: unknown
}

/** What a read asks for: events after `after`, below `horizon` (default: the statement's own). */
export interface ReadOptions {
  readonly after: { readonly tx: bigint; readonly id: bigint }
  readonly limit: number
  readonly types?: ReadonlyArray<string> | undefined
  readonly horizon?: bigint | undefined
}

/**
 * A row of the read: the horizon's `held` and `head` on every row, and one event per row
 * (all its columns null when no event matched: the read still answers the head).
 */
const ReadRow = Schema.Struct({
  held: Schema.Boolean,
  headTx: Schema.NullOr(Schema.BigInt),
  headId: Schema.NullOr(Schema.BigInt),
  tx: Schema.NullOr(Schema.BigInt),
  id: Schema.NullOr(Schema.BigInt),
  type: Schema.NullOr(Schema.String),
  orgId: Schema.NullOr(Schema.String),
  data: Schema.Unknown,
  createdAt: Schema.NullOr(Schema.Date),
  traceparent: Schema.NullOr(Schema.String)
})

/** SQL for the horizon of the statement's snapshot. */
export const horizonSql = (sql: SqlClient.SqlClient) =>
  sql.literal("pg_snapshot_xmin(pg_current_snapshot())::text::bigint")

/**
 * The read as one statement. Every part walks the `(tx, id)` index from a known end: the
 * outbox only grows, so a part the planner answered with a scan of the table (as it did for
 * `held` while it was an `EXISTS … tx >= horizon`, the horizon being unknown at plan time)
 * made each read cost more with every event ever published.
 */
export const readAfterStatement = (sql: SqlClient.SqlClient, options: ReadOptions) => {
  const typeFilter = options.types === undefined ? sql.literal("") : sql`AND type IN ${sql.in(options.types)}`
  const horizon = options.horizon === undefined ? horizonSql(sql) : sql`${String(options.horizon)}::bigint`
  // `held`: a committed event at or above the horizon exists, i.e. the newest visible one is.
  return sql`
      SELECT coalesce((SELECT max(tx) FROM domain_events) >= s.horizon, false) AS held, h.tx AS "headTx", h.id AS "headId", e.tx, e.id, e.type, e.org_id AS "orgId", e.data,
        e.created_at AS "createdAt", e.traceparent
      FROM (SELECT ${horizon} AS horizon) AS s
      LEFT JOIN LATERAL (
        SELECT tx, id FROM domain_events WHERE tx < s.horizon ORDER BY tx DESC, id DESC LIMIT 1
      ) AS h ON true
      LEFT JOIN LATERAL (
        SELECT tx, id, type, org_id, data, created_at, traceparent FROM domain_events
        WHERE (tx, id) > (${String(options.after.tx)}::bigint, ${String(options.after.id)}::bigint)
          AND tx < s.horizon ${typeFilter}
        ORDER BY tx, id LIMIT ${options.limit}
      ) AS e ON true
      ORDER BY e.tx, e.id`
}

/** The read's rows, decoded. */
export const readAfterRows = (sql: SqlClient.SqlClient, options: ReadOptions) =>
  readAfterStatement(sql, options).pipe(decodeRows(ReadRow))

/**
 * The outbox insert of `events` (in order) as a statement to embed in a larger one, e.g. as
 * `WITH appended AS (${appendStatement(...)}) … ${notifySql(sql, "appended")}`, so a
 * publisher that writes other rows too can do it in one round trip; `when` (default true)
 * makes the insert conditional on the rest of that statement. `publishAll` is the usual way.
 * `traceparent` (the publishing span's, see `currentTraceparent`) goes on every event, so
 * the requests they cause (webhook deliveries) continue that trace.
 */
export const appendStatement = (
  sql: SqlClient.SqlClient,
  events: ReadonlyArray<NewDomainEvent>,
  when: Statement.Fragment = sql.literal("true"),
  traceparent: string | null = null
) => {
  const payload = JSON.stringify(events.map((event) => ({
    type: event.type,
    orgId: event.orgId ?? null,
    data: event.data === undefined ? null : event.data
  })))
  // `tx` (the column's default) is this transaction's id: readers order by it.
  return sql`
    INSERT INTO domain_events (type, org_id, data, traceparent)
    SELECT e.value->>'type', e.value->>'orgId', e.value->'data', ${traceparent}::text
    FROM jsonb_array_elements(${payload}::jsonb) WITH ORDINALITY AS e(value, n)
    WHERE ${when}
    ORDER BY e.n
    RETURNING org_id, type`
}

/**
 * The outbox insert of the events a query selects (columns `type`, `org_id`, `data`, in the
 * query's order), to embed like `appendStatement` when the events come from the rows of the
 * statement itself (e.g. one per issue an upsert created).
 */
export const appendSelectedStatement = (sql: SqlClient.SqlClient, select: Statement.Fragment) =>
  sql`INSERT INTO domain_events (type, org_id, data) ${select} RETURNING org_id, type`

/** Commit hints (`CommitHints.ts`): Postgres caps a payload below 8000 bytes; a larger set of hints is sent as none. */
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

/**
 * The select list entry that wakes every runner once the statement's transaction commits
 * (NOTIFY is transactional), after the CTE named `appended` ran, if it appended any event.
 * The payload carries the commit's hints (`CommitHints.ts`).
 */
export const notifySql = (sql: SqlClient.SqlClient, appended: string) =>
  sql`(SELECT pg_notify(${EVENTS_CHANNEL}, ${hintsPayloadSql(sql, appended)})
    FROM (SELECT count(*) AS n FROM ${sql(appended)}) AS done
    WHERE done.n > 0) IS NULL`

/** Appends `events` and wakes every runner once the statement's transaction commits. */
export const appendAndNotify = (
  sql: SqlClient.SqlClient,
  events: ReadonlyArray<NewDomainEvent>,
  traceparent: string | null = null
) =>
  sql`
    WITH appended AS (${appendStatement(sql, events, sql.literal("true"), traceparent)})
    SELECT ${notifySql(sql, "appended")}`

/** Wakes every runner now (outside a transaction: at once). */
export const notifyAll = (sql: SqlClient.SqlClient) => sql`SELECT pg_notify(${EVENTS_CHANNEL}, '')`

/** The first event to keep, and the slowest live consumer's cursor (each null when none). */
const Bound = Schema.Struct({
  tx: Schema.NullOr(Schema.BigInt),
  id: Schema.NullOr(Schema.BigInt),
  pinTx: Schema.NullOr(Schema.BigInt),
  pinId: Schema.NullOr(Schema.BigInt)
})

/** How many events a batch deleted, and the last of them (null when none). */
const Batch = Schema.Struct({
  n: Schema.BigInt,
  lastTx: Schema.NullOr(Schema.BigInt),
  lastId: Schema.NullOr(Schema.BigInt)
})

/**
 * Where retention stops: the first event of the retention period (events are in `(tx, id)`
 * order, which follows their time closely), else the newest event (kept), with the slowest
 * cursor of the consumers active since `activeSince`.
 */
export const retentionBound = (sql: SqlClient.SqlClient, cutoff: string, activeSince: string) =>
  sql`
    SELECT e.tx, e.id, p.last_tx AS "pinTx", p.last_event_id AS "pinId"
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (
      SELECT tx, id FROM (
        (SELECT tx, id FROM domain_events WHERE created_at >= ${cutoff}::timestamptz ORDER BY tx, id LIMIT 1)
        UNION ALL
        (SELECT tx, id FROM domain_events ORDER BY tx DESC, id DESC LIMIT 1)
      ) AS candidates ORDER BY tx, id LIMIT 1
    ) AS e ON true
    LEFT JOIN LATERAL (
      SELECT last_tx, last_event_id FROM event_consumers WHERE updated_at >= ${activeSince}::timestamptz
      ORDER BY last_tx, last_event_id LIMIT 1
    ) AS p ON true`.pipe(decodeRows(Bound))

type At = { readonly tx: bigint; readonly id: bigint }

const positionSql = (sql: SqlClient.SqlClient, at: At) => sql`(${String(at.tx)}::bigint, ${String(at.id)}::bigint)`

/**
 * Deletes up to `limit` events after `after` and before `end` (and at or before `pin`, a
 * consumer's cursor, when given), oldest first; answers how many and the last one.
 */
export const deleteEventBatch = (
  sql: SqlClient.SqlClient,
  batch: { readonly after: At; readonly end: At; readonly pin: At | null; readonly limit: number }
) => {
  const pinned = batch.pin === null ? sql.literal("") : sql`AND (tx, id) <= ${positionSql(sql, batch.pin)}`
  return sql`
    WITH doomed AS (
      SELECT ctid, tx, id FROM domain_events
      WHERE (tx, id) > ${positionSql(sql, batch.after)} AND (tx, id) < ${positionSql(sql, batch.end)} ${pinned}
      ORDER BY tx, id LIMIT ${batch.limit}
    ), gone AS (
      DELETE FROM domain_events WHERE ctid = ANY(ARRAY(SELECT ctid FROM doomed)) RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone) AS n, last.tx AS "lastTx", last.id AS "lastId"
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (SELECT tx, id FROM doomed ORDER BY tx DESC, id DESC LIMIT 1) AS last ON true`.pipe(
    decodeRows(Batch)
  )
}
