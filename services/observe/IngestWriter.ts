import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { publishAll } from "../platform/Events.ts"
import { makeId } from "../platform/Ids.ts"
import { type IngestSpan, SpanRecorder } from "./Collaborators.ts"
import type { PreparedEvent } from "./EventPreparation.ts"
import type { SamplingWindow } from "./Sampling.ts"

/**
 * One group commit of an organization's ingest entity: everything the requests of a
 * flush brought, in one transaction, with a handful of statements whatever the number
 * of events (rows travel as one JSON document each, expanded by `json_to_recordset`):
 *
 * 1. lock the issues of the batch's fingerprints (which are new, which resolved);
 * 2. let the entity's sampler decide each event (the first of a new fingerprint is always kept);
 * 3. insert the kept events; upsert the issues with their counters (every event counts);
 *    distinct users; per-release counters; spans to the `SpanRecorder`; the sampling window;
 * 4. publish `observe.issue.created` / `observe.issue.regressed`.
 */

export interface Sampler {
  /** The kept event's sample weight, or 0 to drop it. */
  readonly decide: (event: PreparedEvent, newFingerprint: boolean) => number
  /** The window after the decisions (written with the commit). */
  readonly window: () => SamplingWindow
}

export interface CommitSummary {
  readonly kept: number
  readonly dropped: number
  readonly newIssues: ReadonlyArray<string>
  readonly regressed: ReadonlyArray<string>
}

interface IssueDelta {
  id: string
  fingerprint: string
  title: string
  type: string | null
  culprit: string | null
  level: string
  count: number
  first: number
  last: number
  firstRelease: string | null
  lastRelease: string | null
  releases: Set<string>
  environments: Set<string>
}

interface ReleaseDelta {
  version: string
  events: number
  errors: number
  spans: number
  errorSpans: number
  newIssues: number
  first: number
  last: number
}

const isError = (level: string) => level === "error" || level === "fatal"

const issueJson = (issue: IssueDelta) => ({
  ...issue,
  releases: [...issue.releases],
  environments: [...issue.environments]
})

/** Rows as one JSON array; `data` and `frames` (already JSON text) are spliced in, not re-escaped. */
const eventRowsJson = (
  rows: ReadonlyArray<{ readonly event: PreparedEvent; readonly issueId: string | null; readonly weight: number }>
) =>
  "[" + rows.map(({ event, issueId, weight }) =>
    `{"id":${JSON.stringify(event.id)},"issue_id":${JSON.stringify(issueId)},"event_id":${
      JSON.stringify(event.eventId)
    },"level":${JSON.stringify(event.level)},"message":${
      JSON.stringify(event.message)
    },"ts":${event.timestamp},"rcv":${event.receivedAt},"release":${JSON.stringify(event.release)},"environment":${
      JSON.stringify(event.environment)
    },"weight":${weight},"stack_id":${JSON.stringify(event.stackId)},"data":${event.data}}`
  ).join(",") + "]"

const stacksJson = (stacks: ReadonlyMap<string, string>) =>
  "[" + [...stacks].map(([id, frames]) => `{"id":${JSON.stringify(id)},"frames":${frames}}`).join(",") + "]"

export class IngestWriter extends Context.Service<IngestWriter, {
  commit(
    orgId: string,
    events: ReadonlyArray<PreparedEvent>,
    sampler: Sampler
  ): Effect.Effect<CommitSummary, SqlError>
}>()("canopy/observe/IngestWriter") {
  static readonly layer = Layer.effect(
    IngestWriter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const spans = yield* SpanRecorder

      const commit = (orgId: string, events: ReadonlyArray<PreparedEvent>, sampler: Sampler) =>
        sql.withTransaction(Effect.gen(function*() {
          const issues = new Map<string, IssueDelta>()
          const releases = new Map<string, ReleaseDelta>()
          const spanRows: Array<IngestSpan> = []

          const releaseOf = (version: string, at: number) => {
            let delta = releases.get(version)
            if (delta === undefined) {
              delta = { version, events: 0, errors: 0, spans: 0, errorSpans: 0, newIssues: 0, first: at, last: at }
              releases.set(version, delta)
            }
            delta.first = Math.min(delta.first, at)
            delta.last = Math.max(delta.last, at)
            return delta
          }

          // Counters first: every event counts, kept or not.
          for (const event of events) {
            const release = event.release === null ? undefined : releaseOf(event.release, event.receivedAt)
            if (event.span !== null) {
              if (release !== undefined) {
                release.spans++
                if (event.span.status === "error") release.errorSpans++
              }
              continue
            }
            if (release !== undefined) {
              release.events++
              if (isError(event.level)) release.errors++
            }
            const fingerprint = event.fingerprint!
            let issue = issues.get(fingerprint)
            if (issue === undefined) {
              issue = {
                id: makeId("grp"),
                fingerprint,
                title: event.title,
                type: event.type,
                culprit: event.culprit,
                level: event.level,
                count: 0,
                first: event.receivedAt,
                last: event.receivedAt,
                firstRelease: event.release,
                lastRelease: event.release,
                releases: new Set(),
                environments: new Set()
              }
              issues.set(fingerprint, issue)
            }
            issue.count++
            issue.level = event.level
            issue.last = Math.max(issue.last, event.receivedAt)
            if (event.release !== null) {
              issue.firstRelease ??= event.release
              issue.lastRelease = event.release
              issue.releases.add(event.release)
            }
            if (event.environment !== null) issue.environments.add(event.environment)
          }

          // 1. The issues, upserted in bulk; which were new, which a resolved one that regressed.
          const upserted = issues.size === 0 ? [] : yield* sql<
            { id: string; fingerprint: string; inserted: boolean; regressed: boolean }
          >`
            INSERT INTO observe_issues AS i (id, org_id, fingerprint, title, type, culprit, level, count,
              first_seen, last_seen, first_release, last_release, releases, environments)
            SELECT v.id, ${orgId}, v.fingerprint, v.title, v.type, v.culprit, v.level, v.count,
              to_timestamp(v.first / 1000.0), to_timestamp(v.last / 1000.0), v."firstRelease", v."lastRelease",
              v.releases, v.environments
            FROM json_to_recordset(${JSON.stringify([...issues.values()].map(issueJson))}::json) AS v(id text,
              fingerprint text, title text, type text, culprit text, level text, count bigint, first float8,
              last float8, "firstRelease" text, "lastRelease" text, releases text[], environments text[])
            ON CONFLICT (org_id, fingerprint) DO UPDATE SET
              count = i.count + EXCLUDED.count,
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
            RETURNING id, fingerprint, (xmax = 0) AS inserted, coalesce(regressed_at = now(), false) AS regressed`
          const stored = new Map(upserted.map((row) => [row.fingerprint, row]))

          // 2. Sampling, in arrival order: the first event of a new issue is always kept.
          const kept: Array<{ event: PreparedEvent; issueId: string | null; weight: number }> = []
          const users: Array<{ issue_id: string; user_key: string }> = []
          const firstOfNew = new Set<string>()
          let dropped = 0
          for (const event of events) {
            if (event.span !== null) {
              sampler.decide(event, true)
              spanRows.push({
                ...event.span,
                parentId: event.span.parentId ?? undefined,
                timestamp: new Date(event.timestamp),
                release: event.release ?? undefined,
                environment: event.environment ?? undefined
              })
              continue
            }
            const issue = stored.get(event.fingerprint!)!
            const isNew = issue.inserted && !firstOfNew.has(issue.id)
            if (isNew) firstOfNew.add(issue.id)
            if (event.userKey !== null) users.push({ issue_id: issue.id, user_key: event.userKey })
            const weight = sampler.decide(event, isNew)
            if (weight > 0) kept.push({ event, issueId: issue.id, weight })
            else dropped++
          }
          for (const event of events) {
            if (event.release !== null && event.fingerprint !== null && firstOfNew.delete(stored.get(event.fingerprint)!.id)) {
              releases.get(event.release)!.newIssues++
            }
          }

          // 3. Everything else in one statement: stacks, kept events, distinct users, releases, the window.
          const window = sampler.window()
          const stacks = new Map(kept.flatMap(({ event }) => event.stackId === null ? [] : [[event.stackId, event.stack!]]))
          yield* sql`
            WITH stacks AS (
              INSERT INTO observe_stacks (org_id, id, frames)
              SELECT ${orgId}, v.id, v.frames FROM json_to_recordset(${stacksJson(stacks)}::json) AS v(id text, frames json)
              ON CONFLICT DO NOTHING
            ), events AS (
              INSERT INTO observe_events (id, org_id, issue_id, event_id, level, message, timestamp, received_at,
                release, environment, sample_weight, stack_id, data)
              SELECT v.id, ${orgId}, v.issue_id, v.event_id, v.level, v.message, to_timestamp(v.ts / 1000.0),
                to_timestamp(v.rcv / 1000.0), v.release, v.environment, v.weight, v.stack_id, v.data
              FROM json_to_recordset(${eventRowsJson(kept)}::json) AS v(id text, issue_id text, event_id text,
                level text, message text, ts float8, rcv float8, release text, environment text, weight real,
                stack_id text, data json)
            ), seen AS (
              INSERT INTO observe_issue_users (issue_id, user_key)
              SELECT DISTINCT v.issue_id, v.user_key
              FROM json_to_recordset(${JSON.stringify(users)}::json) AS v(issue_id text, user_key text)
              ON CONFLICT DO NOTHING
              RETURNING issue_id
            ), user_counts AS (
              UPDATE observe_issues i SET users = i.users + c.n
              FROM (SELECT issue_id, count(*) AS n FROM seen GROUP BY issue_id) c WHERE i.id = c.issue_id
            ), releases AS (
              INSERT INTO observe_releases AS r (org_id, version, events, errors, spans, error_spans, new_issues,
                first_seen, last_seen)
              SELECT ${orgId}, v.version, v.events, v.errors, v.spans, v."errorSpans", v."newIssues",
                to_timestamp(v.first / 1000.0), to_timestamp(v.last / 1000.0)
              FROM json_to_recordset(${JSON.stringify([...releases.values()])}::json) AS v(version text,
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
            )
            INSERT INTO observe_ingest_windows (org_id, window_start, total, kept, previous_total)
            VALUES (${orgId}, ${window.start}, ${window.total}, ${window.kept}, ${window.previousTotal})
            ON CONFLICT (org_id) DO UPDATE SET window_start = EXCLUDED.window_start, total = EXCLUDED.total,
              kept = EXCLUDED.kept, previous_total = EXCLUDED.previous_total`
          if (spanRows.length > 0) yield* spans.recordSpans(orgId, spanRows)

          const newIssues = upserted.filter((row) => row.inserted).map((row) => row.id)
          const regressed = upserted.filter((row) => row.regressed).map((row) => row.id)
          yield* publishAll([
            ...newIssues.map((issueId) => ({ type: "observe.issue.created", orgId, data: { issueId } })),
            ...regressed.map((issueId) => ({ type: "observe.issue.regressed", orgId, data: { issueId } }))
          ])
          return { kept: kept.length, dropped, newIssues, regressed }
        })).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      return IngestWriter.of({ commit })
    })
  )
}
