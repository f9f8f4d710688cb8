import { PgTypes } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { IssueCreatedEvent, IssueRegressedEvent } from "../../schemas/Observe.ts"
import { appendSelectedStatement, notifySql } from "../platform/Events.ts"
import { pgArray } from "../platform/PgArrayParam.ts"
import type { CommitPlan, IssueDelta, KeptEvent } from "./CommitPlan.ts"
import { Performance } from "./Performance.ts"
import type { SamplingWindow } from "./Sampling.ts"

/**
 * One group commit of an organization's ingest entity (a `CommitPlan`) in one statement
 * whatever the number of events (events travel as one typed array per column, expanded by
 * `unnest`; the other kinds, few rows each, as one JSON document per kind, expanded by
 * `json_to_recordset`): new stacks, kept events, distinct users, new issues (inserted, with
 * `observe.issue.created` appended to the outbox by the statement, with its NOTIFY only when
 * there are any), the counter deltas of the issues that exist (one buffered row, folded into
 * the issue rows later in bulk: `IssueFold.ts`), releases, the sampling window. Without spans
 * that statement is the whole commit and runs alone, atomic as its own transaction: no
 * `BEGIN` and `COMMIT` round trips, each of which waited for a busy event loop. With spans,
 * the statement and `Performance.recordSpans` share one transaction.
 *
 * The entity runs one commit of an organization at a time, so the counter rows are never
 * contended; their rows are still sorted (see `CommitPlan`) should two ever meet.
 */

/** `ord` keeps the plan's sorted order through the join (row locks in one order). */
const issueJson = (issue: IssueDelta, ord: number) => ({
  ...issue,
  ord,
  releases: [...issue.releases],
  environments: [...issue.environments]
})

/**
 * The counter deltas of the issues the entity knows exist, as buffered for the fold
 * (`IssueFold.ts` reads these keys); null when there are none.
 */
const knownDeltasJson = (issues: ReadonlyArray<IssueDelta>): string | null => {
  const known = issues.filter((issue) => !issue.isNew)
  return known.length === 0 ? null : JSON.stringify(known.map((issue) => ({
    id: issue.id,
    count: issue.count,
    level: issue.level,
    last: issue.last,
    firstRelease: issue.firstRelease,
    lastRelease: issue.lastRelease,
    releases: [...issue.releases],
    environments: [...issue.environments]
  })))
}

const textArray = (values: Array<string | null>) => pgArray(values, PgTypes.OID.text)
const float8Array = (values: Array<number>) => pgArray(values, PgTypes.OID.float8)

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

const stacksJson = (stacks: ReadonlyMap<string, string>) =>
  "[" + [...stacks].map(([id, frames]) => `{"id":${JSON.stringify(id)},"frames":${frames}}`).join(",") + "]"

export class IngestWriter extends Context.Service<IngestWriter, {
  /** The issues that exist for these fingerprints (a plain read, before planning a commit). */
  lookupIssues(
    orgId: string,
    fingerprints: ReadonlyArray<string>
  ): Effect.Effect<ReadonlyArray<{ readonly id: string; readonly fingerprint: string }>, SqlError>
  /** Writes a planned commit in one transaction; returns the issues it created and the ones it reopened. */
  write(
    orgId: string,
    plan: CommitPlan,
    window: SamplingWindow
  ): Effect.Effect<{ readonly newIssues: ReadonlyArray<string>; readonly regressed: ReadonlyArray<string> }, SqlError>
}>()("canopy/observe/IngestWriter") {
  static readonly layer = Layer.effect(
    IngestWriter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const performance = yield* Performance

      const lookupIssues = (orgId: string, fingerprints: ReadonlyArray<string>) =>
        fingerprints.length === 0
          ? Effect.succeed([])
          : sql<{ id: string; fingerprint: string }>`
            SELECT id, fingerprint FROM observe_issues
            WHERE org_id = ${orgId} AND fingerprint = ANY(${fingerprints as Array<string>})`

      const write = (orgId: string, plan: CommitPlan, window: SamplingWindow) =>
        Effect.gen(function*() {
          const events = eventColumns(plan.kept)
          const knownIds = plan.issues.flatMap((issue) => issue.isNew ? [] : [issue.id])
          const knownDeltas = knownDeltasJson(plan.issues)
          // One statement for every row kind (a round trip each cost more than the rows). Its
          // parts run in one order for every commit: the uncontended stacks and events first
          // (the main query's one-time filter counts them, so it waits for them), then the
          // distinct users and new issues (the main query), then releases and the sampling
          // window (run after it). Rows of each kind are sorted by key, so concurrent commits
          // take their row locks in one order, and the contended counter rows are locked late.
          // Known issues' rows are not written: their deltas go to one buffered row, unless the
          // row is missing (issues go only with their organization; should one vanish anyway),
          // which the upsert creates again from the commit's own delta.
          const statement = sql<{ id: string; inserted: boolean; regressed: boolean }>`
            WITH missing AS (
              SELECT coalesce(array_agg(k.id), '{}') AS ids
              FROM unnest(${textArray(knownIds)}::text[]) AS k(id)
              WHERE NOT EXISTS (SELECT 1 FROM observe_issues i WHERE i.id = k.id)
            ), stacks AS (
              INSERT INTO observe_stacks (org_id, id, frames)
              SELECT ${orgId}, v.id, v.frames
              FROM json_to_recordset(${stacksJson(plan.stacks)}::json) AS v(id text, frames json)
              ON CONFLICT DO NOTHING
              RETURNING 1
            ), events AS (
              INSERT INTO observe_events (id, org_id, issue_id, event_id, level, message, timestamp, received_at,
                release, environment, sample_weight, stack_id, data)
              SELECT v.id, ${orgId}, v.issue_id, v.event_id, v.level, v.message, to_timestamp(v.ts / 1000.0),
                to_timestamp(v.rcv / 1000.0), v.release, v.environment, v.weight, v.stack_id, v.data::json
              FROM unnest(${events.id}::text[], ${events.issueId}::text[], ${events.eventId}::text[],
                ${events.level}::text[], ${events.message}::text[], ${events.ts}::float8[], ${events.rcv}::float8[],
                ${events.release}::text[], ${events.environment}::text[], ${events.weight}::float8[],
                ${events.stackId}::text[], ${events.data}::text[])
                AS v(id, issue_id, event_id, level, message, ts, rcv, release, environment, weight, stack_id, data)
              RETURNING 1
            ), releases AS (
              INSERT INTO observe_releases AS r (org_id, version, events, errors, spans, error_spans, new_issues,
                first_seen, last_seen)
              SELECT ${orgId}, v.version, v.events, v.errors, v.spans, v."errorSpans", v."newIssues",
                to_timestamp(v.first / 1000.0), to_timestamp(v.last / 1000.0)
              FROM json_to_recordset(${JSON.stringify(plan.releases)}::json) AS v(version text,
                events bigint, errors bigint, spans bigint, "errorSpans" bigint, "newIssues" int, first float8,
                last float8)
              ON CONFLICT (org_id, version) DO UPDATE SET
                events = r.events + EXCLUDED.events,
                errors = r.errors + EXCLUDED.errors,
                spans = r.spans + EXCLUDED.spans,
                error_spans = r.error_spans + EXCLUDED.error_spans,
                new_issues = r.new_issues + EXCLUDED.new_issues,
                first_seen = least(r.first_seen, EXCLUDED.first_seen),
                last_seen = greatest(r.last_seen, EXCLUDED.last_seen)
            ), sampling AS (
              -- Commits may finish out of order, so the window only moves forward.
              INSERT INTO observe_ingest_windows AS w (org_id, window_start, total, kept, previous_total)
              VALUES (${orgId}, ${window.start}, ${window.total}, ${window.kept}, ${window.previousTotal})
              ON CONFLICT (org_id) DO UPDATE SET window_start = EXCLUDED.window_start, total = EXCLUDED.total,
                kept = EXCLUDED.kept, previous_total = EXCLUDED.previous_total
              WHERE (EXCLUDED.window_start, EXCLUDED.total) > (w.window_start, w.total)
            ), seen AS (
              INSERT INTO observe_issue_users (issue_id, user_key)
              SELECT u.issue_id, u.user_key
              FROM json_to_recordset(${JSON.stringify(plan.users)}::json) AS u(issue_id text, user_key text)
              ON CONFLICT DO NOTHING
              RETURNING issue_id
            ), new_users AS (SELECT issue_id, count(*) AS n FROM seen GROUP BY issue_id),
            pending AS (
              -- First sightings of users of known issues are counted by the fold (one id each).
              INSERT INTO observe_issue_pending (org_id, deltas, users, missing)
              SELECT ${orgId}, ${knownDeltas}::json,
                (SELECT coalesce(array_agg(s.issue_id), '{}') FROM seen s
                  WHERE s.issue_id = ANY(${textArray(knownIds)}::text[]) AND NOT s.issue_id = ANY(m.ids)),
                m.ids
              FROM missing m
              WHERE ${knownDeltas !== null}
            ), upserted AS (
            INSERT INTO observe_issues AS i (id, org_id, fingerprint, title, type, culprit, level, count, users,
              first_seen, last_seen, first_release, last_release, releases, environments)
            SELECT v.id, ${orgId}, v.fingerprint, v.title, v.type, v.culprit, v.level, v.count, coalesce(n.n, 0),
              to_timestamp(v.first / 1000.0), to_timestamp(v.last / 1000.0), v."firstRelease", v."lastRelease",
              v.releases, v.environments
            FROM json_to_recordset(${JSON.stringify(plan.issues.map(issueJson))}::json)
              AS v(id text, fingerprint text, title text, type text, culprit text, level text,
                count bigint, first float8, last float8, "firstRelease" text, "lastRelease" text, releases text[],
                environments text[], "isNew" boolean, ord int)
            LEFT JOIN new_users n ON n.issue_id = v.id
            WHERE (SELECT count(*) FROM stacks) + (SELECT count(*) FROM events) >= 0
              AND (v."isNew" OR EXISTS (SELECT 1 FROM missing m WHERE v.id = ANY(m.ids)))
            ORDER BY v.ord
            ON CONFLICT (org_id, fingerprint) DO UPDATE SET
              count = i.count + EXCLUDED.count,
              users = i.users + EXCLUDED.users,
              level = EXCLUDED.level,
              last_seen = greatest(i.last_seen, EXCLUDED.last_seen),
              last_release = coalesce(EXCLUDED.last_release, i.last_release),
              first_release = coalesce(i.first_release, EXCLUDED.first_release),
              releases = CASE WHEN EXCLUDED.releases <@ i.releases THEN i.releases
                ELSE ARRAY(SELECT DISTINCT unnest(i.releases || EXCLUDED.releases)) END,
              environments = CASE WHEN EXCLUDED.environments <@ i.environments THEN i.environments
                ELSE ARRAY(SELECT DISTINCT unnest(i.environments || EXCLUDED.environments)) END,
              -- A new event of a resolved issue regresses it (ignored stays ignored).
              status = CASE WHEN i.status = 'resolved' THEN 'unresolved' ELSE i.status END,
              resolved_at = CASE WHEN i.status = 'resolved' THEN NULL ELSE i.resolved_at END,
              regressed_at = CASE WHEN i.status = 'resolved' THEN now() ELSE i.regressed_at END
            RETURNING id, fingerprint, (xmax = 0) AS inserted, coalesce(regressed_at = now(), false) AS regressed
            ), appended AS (${
            // The domain events as publishAll appends them: created issues, then reopened ones.
            appendSelectedStatement(
              sql,
              sql`SELECT CASE WHEN u.inserted THEN ${IssueCreatedEvent.type} ELSE ${IssueRegressedEvent.type} END,
                  ${orgId}, jsonb_build_object('issueId', u.id)
                FROM upserted u WHERE u.inserted OR u.regressed
                ORDER BY u.inserted DESC, u.fingerprint`
            )})
            -- Every issue's row is returned, so the notification is evaluated whenever events were appended.
            SELECT u.id, u.inserted, u.regressed, ${notifySql(sql, "appended")} AS notified
            FROM upserted u`
          const upserted = plan.spans.length === 0 ?
            yield* statement :
            yield* sql.withTransaction(
              Effect.tap(statement, () =>
                performance.recordSpans(orgId, plan.spans).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
            )
          return {
            newIssues: upserted.flatMap((row) =>
              row.inserted ? [row.id] : []
            ),
            regressed: upserted.flatMap((row) => row.regressed ? [row.id] : [])
          }
        })

      return IngestWriter.of({ lookupIssues, write })
    })
  )
}
