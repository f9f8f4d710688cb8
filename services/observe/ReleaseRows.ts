import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { Release } from "../../schemas/observe/Observe.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import type { ReleaseDelta } from "./CommitPlan.ts"

/*
 * The releases an organization's events and spans named (`observe_releases`, counters
 * written by the ingest group commit), and every statement on them (their one owner).
 */

/** A stored release; rows are decoded with it. */
const ReleaseRow = Schema.Struct({
  version: Schema.String,
  events: Int8,
  errors: Int8,
  spans: Int8,
  error_spans: Int8,
  new_issues: Schema.Int,
  first_seen: Schema.Date,
  last_seen: Schema.Date
})
type ReleaseRow = typeof ReleaseRow.Type

const toRelease = (row: ReleaseRow): Release => {
  // Over the minutes the release has been seen (at least one).
  const minutes = Math.max(1, (row.last_seen.getTime() - row.first_seen.getTime()) / 60_000)
  return {
    version: row.version,
    events: row.events,
    errors: row.errors,
    errorsPerMinute: Math.round((row.errors / minutes) * 1000) / 1000,
    spans: row.spans,
    errorSpans: row.error_spans,
    errorShare: row.spans === 0 ? null : row.error_spans / row.spans,
    newIssues: row.new_issues,
    firstSeen: row.first_seen.toISOString(),
    lastSeen: row.last_seen.toISOString()
  }
}

/** An organization's releases, last seen first. */
export const listReleases = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT * FROM observe_releases WHERE org_id = ${orgId} ORDER BY last_seen DESC, version`.pipe(
    decodeRows(ReleaseRow),
    Effect.map((rows) => rows.map(toRelease))
  )

export const findRelease = (sql: SqlClient.SqlClient, orgId: string, version: string) =>
  sql`
    SELECT * FROM observe_releases WHERE org_id = ${orgId} AND version = ${version}`.pipe(
    decodeRows(ReleaseRow),
    Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toRelease))
  )

/**
 * The ingest group commit's `releases` CTE (`IngestWriter`): adds the commit's deltas to
 * its releases, creating the new ones.
 */
export const upsertReleasesStatement = (
  sql: SqlClient.SqlClient,
  orgId: string,
  releases: ReadonlyArray<ReleaseDelta>
) =>
  sql`
    INSERT INTO observe_releases AS r (org_id, version, events, errors, spans, error_spans, new_issues,
      first_seen, last_seen)
    SELECT ${orgId}, v.version, v.events, v.errors, v.spans, v."errorSpans", v."newIssues",
      to_timestamp(v.first / 1000.0), to_timestamp(v.last / 1000.0)
    FROM json_to_recordset(${JSON.stringify(releases)}::json) AS v(version text,
      events bigint, errors bigint, spans bigint, "errorSpans" bigint, "newIssues" int, first float8,
      last float8)
    ON CONFLICT (org_id, version) DO UPDATE SET
      events = r.events + EXCLUDED.events,
      errors = r.errors + EXCLUDED.errors,
      spans = r.spans + EXCLUDED.spans,
      error_spans = r.error_spans + EXCLUDED.error_spans,
      new_issues = r.new_issues + EXCLUDED.new_issues,
      first_seen = least(r.first_seen, EXCLUDED.first_seen),
      last_seen = greatest(r.last_seen, EXCLUDED.last_seen)`
