import { PgTypes } from "@effect/sql-pg"
import { Effect, Option, Predicate, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { StoredEvent } from "../../schemas/observe/Observe.ts"
import { pgArray } from "../platform/PgArrayParam.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import type { KeptEvent } from "./CommitPlan.ts"

/*
 * The kept events (`observe_events`) and their stacks, stored once per distinct stack
 * (`observe_stacks`), and every statement on them (their one owner). The ingest group
 * commit writes both in its one statement: it composes the fragments below.
 */

/** A stored event with its stack's frames; rows are decoded with it. */
const EventRow = Schema.Struct({
  id: Schema.String,
  issue_id: Schema.NullOr(Schema.String),
  event_id: Schema.NullOr(Schema.String),
  level: Schema.String,
  message: Schema.String,
  timestamp: Schema.Date,
  received_at: Schema.Date,
  release: Schema.NullOr(Schema.String),
  environment: Schema.NullOr(Schema.String),
  sample_weight: Schema.Number,
  /** The event as validated at ingest (`json`, parsed by the driver), its frames left out. */
  data: Schema.Record(Schema.String, Schema.Unknown),
  frames: Schema.NullOr(Schema.Array(Schema.Unknown))
})
type EventRow = typeof EventRow.Type

const toEvent = (row: EventRow): StoredEvent => {
  const exception = row.data.exception
  return {
    id: row.id,
    issueId: row.issue_id,
    eventId: row.event_id,
    level: row.level,
    message: row.message,
    timestamp: row.timestamp.toISOString(),
    receivedAt: row.received_at.toISOString(),
    release: row.release,
    environment: row.environment,
    sampleWeight: row.sample_weight,
    // The frames are stored once per distinct stack (observe_stacks): put them back.
    data: row.frames === null
      ? row.data
      : {
        ...row.data,
        exception: { ...(Predicate.isObject(exception) ? exception : {}), stacktrace: { frames: row.frames } }
      }
  }
}

const Count = Schema.Struct({ n: Int8 })

/** Events with their stack's frames. */
const eventsWithFrames = "observe_events e LEFT JOIN observe_stacks s ON s.org_id = e.org_id AND s.id = e.stack_id"

/** A page of an issue's kept events, newest first. */
export const issueEvents = (
  sql: SqlClient.SqlClient,
  orgId: string,
  issueId: string,
  page: { readonly limit: number; readonly offset: number }
) =>
  sql`
    SELECT e.*, s.frames FROM ${sql.unsafe(eventsWithFrames)} WHERE e.issue_id = ${issueId}
      AND e.org_id = ${orgId}
    ORDER BY e.received_at DESC, e.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(
    decodeRows(EventRow),
    Effect.map((rows) => rows.map(toEvent))
  )

/** How many events of an issue are kept. */
export const countIssueEvents = (sql: SqlClient.SqlClient, issueId: string) =>
  sql`
    SELECT count(*) AS n FROM observe_events WHERE issue_id = ${issueId}`.pipe(
    decodeRows(Count),
    Effect.map((rows) => rows[0].n)
  )

/** An event by our `evt_` id or the client's `event_id` (Sentry SDKs know only theirs). */
export const findEvent = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`
    SELECT e.*, s.frames FROM ${sql.unsafe(eventsWithFrames)}
    WHERE e.org_id = ${orgId} AND (e.id = ${id} OR e.event_id = ${id})
    ORDER BY e.received_at DESC LIMIT 1`.pipe(
    decodeRows(EventRow),
    Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toEvent))
  )

/*
 * The ingest group commit's parts (`IngestWriter`), as CTEs of its one statement: `stacks`
 * and `events`, each returning one row per row written.
 */

const textArray = (values: Array<string | null>) => pgArray(values, PgTypes.OID.text)
const float8Array = (values: Array<number>) => pgArray(values, PgTypes.OID.float8)

const stacksJson = (stacks: ReadonlyMap<string, string>) =>
  "[" + [...stacks].map(([id, frames]) => `{"id":${JSON.stringify(id)},"frames":${frames}}`).join(",") + "]"

/** `stacks`: the commit's stacks (id → frames JSON) not stored yet. */
export const insertStacksStatement = (sql: SqlClient.SqlClient, orgId: string, stacks: ReadonlyMap<string, string>) =>
  sql`
    INSERT INTO observe_stacks (org_id, id, frames)
    SELECT ${orgId}, v.id, v.frames
    FROM json_to_recordset(${stacksJson(stacks)}::json) AS v(id text, frames json)
    ON CONFLICT DO NOTHING
    RETURNING 1`

/**
 * The kept events as one typed binary array per column (for `unnest`): Postgres reads them
 * without parsing, and each `data` text is parsed once (by its `json` cast), where one JSON
 * document of rows was parsed whole and then each `data` again.
 */
const eventColumns = (rows: ReadonlyArray<KeptEvent>) => {
  const n = rows.length
  const id = new Array<string>(n), issueId = new Array<string>(n), eventId = new Array<string | null>(n)
  const level = new Array<string>(n), message = new Array<string>(n), release = new Array<string | null>(n)
  const environment = new Array<string | null>(n), stackId = new Array<string | null>(n)
  const data = new Array<string>(n), ts = new Array<number>(n), rcv = new Array<number>(n)
  const weight = new Array<number>(n)
  for (let i = 0; i < n; i++) {
    const { event, issueId: issue, weight: w } = rows[i]
    id[i] = event.id
    issueId[i] = issue
    eventId[i] = event.eventId
    level[i] = event.level
    message[i] = event.message
    ts[i] = event.timestamp
    rcv[i] = event.receivedAt
    release[i] = event.release
    environment[i] = event.environment
    weight[i] = w
    stackId[i] = event.stackId
    data[i] = event.data
  }
  return {
    id: textArray(id),
    issueId: textArray(issueId),
    eventId: textArray(eventId),
    level: textArray(level),
    message: textArray(message),
    ts: float8Array(ts),
    rcv: float8Array(rcv),
    release: textArray(release),
    environment: textArray(environment),
    weight: float8Array(weight),
    stackId: textArray(stackId),
    data: textArray(data)
  }
}

/** `events`: the kept events, with their issue and sample weight. */
export const insertEventsStatement = (sql: SqlClient.SqlClient, orgId: string, kept: ReadonlyArray<KeptEvent>) => {
  const events = eventColumns(kept)
  return sql`
    INSERT INTO observe_events (id, org_id, issue_id, event_id, level, message, timestamp, received_at,
      release, environment, sample_weight, stack_id, data)
    SELECT v.id, ${orgId}, v.issue_id, v.event_id, v.level, v.message, to_timestamp(v.ts / 1000.0),
      to_timestamp(v.rcv / 1000.0), v.release, v.environment, v.weight, v.stack_id, v.data::json
    FROM unnest(${events.id}::text[], ${events.issueId}::text[], ${events.eventId}::text[],
      ${events.level}::text[], ${events.message}::text[], ${events.ts}::float8[], ${events.rcv}::float8[],
      ${events.release}::text[], ${events.environment}::text[], ${events.weight}::float8[],
      ${events.stackId}::text[], ${events.data}::text[])
      AS v(id, issue_id, event_id, level, message, ts, rcv, release, environment, weight, stack_id, data)
    RETURNING 1`
}
