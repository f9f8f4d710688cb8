import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { NotFound } from "../../schemas/Errors.ts"
import {
  type Issue,
  type IssueStatus,
  IssueUpdatedEvent,
  type ListIssuesQuery,
  type Release,
  type StoredEvent
} from "../../schemas/Observe.ts"
import { publish } from "../platform/Events.ts"
import { foldIssueCounters } from "./IssueFold.ts"

/**
 * Reading what ingestion wrote (GUIDE §7): issues with their counters, their kept
 * events, single events and releases; and changing an issue's status. Another
 * organization's issue, event or release answers 404. Counters are buffered by ingestion
 * (`IssueFold.ts`): every read of issues and every status change folds them first, so a read
 * after a 202 shows that event counted.
 */

interface IssueRow {
  readonly id: string
  readonly title: string
  readonly type: string | null
  readonly culprit: string | null
  readonly level: string
  readonly status: IssueStatus
  readonly fingerprint: string
  readonly count: string | number
  readonly users: string | number
  readonly first_seen: Date
  readonly last_seen: Date
  readonly first_release: string | null
  readonly last_release: string | null
  readonly releases: ReadonlyArray<string>
  readonly environments: ReadonlyArray<string>
  readonly resolved_at: Date | null
}

const toIssue = (row: IssueRow): Issue => ({
  id: row.id,
  title: row.title,
  type: row.type,
  culprit: row.culprit,
  level: row.level,
  status: row.status,
  fingerprint: row.fingerprint,
  count: Number(row.count),
  users: Number(row.users),
  firstSeen: row.first_seen.toISOString(),
  lastSeen: row.last_seen.toISOString(),
  firstRelease: row.first_release,
  lastRelease: row.last_release,
  releases: row.releases,
  environments: row.environments,
  resolvedAt: row.resolved_at?.toISOString() ?? null
})

interface EventRow {
  readonly id: string
  readonly issue_id: string | null
  readonly event_id: string | null
  readonly level: string
  readonly message: string
  readonly timestamp: Date
  readonly received_at: Date
  readonly release: string | null
  readonly environment: string | null
  readonly sample_weight: number
  readonly data: Record<string, any>
  readonly frames: ReadonlyArray<unknown> | null
}

const toEvent = (row: EventRow): StoredEvent => ({
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
    : { ...row.data, exception: { ...row.data.exception, stacktrace: { frames: row.frames } } }
})

/** Events with their stack's frames. */
const eventsWithFrames = "observe_events e LEFT JOIN observe_stacks s ON s.org_id = e.org_id AND s.id = e.stack_id"

interface ReleaseRow {
  readonly version: string
  readonly events: string | number
  readonly errors: string | number
  readonly spans: string | number
  readonly error_spans: string | number
  readonly new_issues: number
  readonly first_seen: Date
  readonly last_seen: Date
}

const toRelease = (row: ReleaseRow): Release => {
  const errors = Number(row.errors)
  const spans = Number(row.spans)
  const errorSpans = Number(row.error_spans)
  // Over the minutes the release has been seen (at least one).
  const minutes = Math.max(1, (row.last_seen.getTime() - row.first_seen.getTime()) / 60_000)
  return {
    version: row.version,
    events: Number(row.events),
    errors,
    errorsPerMinute: Math.round((errors / minutes) * 1000) / 1000,
    spans,
    errorSpans,
    errorShare: spans === 0 ? null : errorSpans / spans,
    newIssues: row.new_issues,
    firstSeen: row.first_seen.toISOString(),
    lastSeen: row.last_seen.toISOString()
  }
}

const sortColumns = { lastSeen: "last_seen", firstSeen: "first_seen", count: "count" } as const

export class Issues extends Context.Service<Issues, {
  list(orgId: string, query: ListIssuesQuery): Effect.Effect<{ issues: ReadonlyArray<Issue>; count: number }>
  get(orgId: string, id: string): Effect.Effect<Issue, NotFound>
  setStatus(orgId: string, id: string, status: IssueStatus): Effect.Effect<Issue, NotFound>
  events(
    orgId: string,
    issueId: string,
    page: { readonly limit?: number | undefined; readonly offset?: number | undefined }
  ): Effect.Effect<{ events: ReadonlyArray<StoredEvent>; count: number }, NotFound>
  event(orgId: string, id: string): Effect.Effect<StoredEvent, NotFound>
  releases(orgId: string): Effect.Effect<{ releases: ReadonlyArray<Release>; count: number }>
  release(orgId: string, version: string): Effect.Effect<Release, NotFound>
}>()("canopy/observe/Issues") {
  static readonly layer = Layer.effect(
    Issues,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const issueNotFound = (id: string) => new NotFound({ message: `Issue '${id}' not found` })
      const fold = (orgId: string) => foldIssueCounters(sql, orgId).pipe(Effect.orDie)

      const list = Effect.fn("Issues.list")(function*(orgId: string, query: ListIssuesQuery) {
        yield* fold(orgId)
        const filters = [
          sql`org_id = ${orgId}`,
          ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
          ...(query.level === undefined ? [] : [sql`level = ${query.level}`]),
          ...(query.release === undefined ? [] : [sql`${query.release} = ANY(releases)`]),
          ...(query.environment === undefined ? [] : [sql`${query.environment} = ANY(environments)`])
        ]
        const where = sql.and(filters)
        const order = sql.unsafe(sortColumns[query.sort ?? "lastSeen"])
        const rows = yield* sql<IssueRow & { total: string }>`
          SELECT *, count(*) OVER () AS total FROM observe_issues WHERE ${where}
          ORDER BY ${order} DESC, id DESC LIMIT ${query.limit ?? 50} OFFSET ${query.offset ?? 0}`.pipe(Effect.orDie)
        const count = rows.length > 0
          ? Number(rows[0].total)
          : Number(
            (yield* sql<{ n: string }>`SELECT count(*) AS n FROM observe_issues WHERE ${where}`.pipe(
              Effect.orDie
            ))[0].n
          )
        return { issues: rows.map(toIssue), count }
      })

      const get = Effect.fn("Issues.get")(function*(orgId: string, id: string) {
        yield* fold(orgId)
        const rows = yield* sql<IssueRow>`SELECT * FROM observe_issues WHERE id = ${id} AND org_id = ${orgId}`.pipe(
          Effect.orDie
        )
        if (rows.length === 0) return yield* issueNotFound(id)
        return toIssue(rows[0])
      })

      const setStatus = Effect.fn("Issues.setStatus")(function*(orgId: string, id: string, status: IssueStatus) {
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          // Events committed before the change are folded before it: they never regress a resolve.
          yield* foldIssueCounters(sql, orgId)
          const rows = yield* sql<IssueRow>`
            UPDATE observe_issues SET status = ${status},
              resolved_at = CASE WHEN ${status} = 'resolved' THEN coalesce(resolved_at, now()) ELSE NULL END
            WHERE id = ${id} AND org_id = ${orgId} RETURNING *`
          if (rows.length > 0) yield* publish(IssueUpdatedEvent.make(orgId, { issueId: id, status }))
          return rows
        })).pipe(Effect.orDie, Effect.provideService(SqlClient.SqlClient, sql))
        if (rows.length === 0) return yield* issueNotFound(id)
        return toIssue(rows[0])
      })

      const events = Effect.fn("Issues.events")(
        function*(orgId: string, issueId: string, page: { readonly limit?: number; readonly offset?: number }) {
          const issue = yield* get(orgId, issueId)
          const rows = yield* sql<EventRow>`
            SELECT e.*, s.frames FROM ${sql.unsafe(eventsWithFrames)} WHERE e.issue_id = ${issueId}
              AND e.org_id = ${orgId}
            ORDER BY e.received_at DESC, e.id DESC LIMIT ${page.limit ?? 50} OFFSET ${page.offset ?? 0}`.pipe(
            Effect.orDie
          )
          const stored = yield* sql<{ n: string }>`
            SELECT count(*) AS n FROM observe_events WHERE issue_id = ${issue.id}`.pipe(Effect.orDie)
          return { events: rows.map(toEvent), count: Number(stored[0].n) }
        }
      )

      const event = Effect.fn("Issues.event")(function*(orgId: string, id: string) {
        // Our `evt_` id, or the client's `event_id` (Sentry SDKs know only theirs).
        const rows = yield* sql<EventRow>`
          SELECT e.*, s.frames FROM ${sql.unsafe(eventsWithFrames)}
          WHERE e.org_id = ${orgId} AND (e.id = ${id} OR e.event_id = ${id})
          ORDER BY e.received_at DESC LIMIT 1`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* new NotFound({ message: `Event '${id}' not found` })
        return toEvent(rows[0])
      })

      const releases = Effect.fn("Issues.releases")(function*(orgId: string) {
        const rows = yield* sql<ReleaseRow>`
          SELECT * FROM observe_releases WHERE org_id = ${orgId} ORDER BY last_seen DESC, version`.pipe(Effect.orDie)
        return { releases: rows.map(toRelease), count: rows.length }
      })

      const release = Effect.fn("Issues.release")(function*(orgId: string, version: string) {
        const rows = yield* sql<ReleaseRow>`
          SELECT * FROM observe_releases WHERE org_id = ${orgId} AND version = ${version}`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* new NotFound({ message: `Release '${version}' not found` })
        return toRelease(rows[0])
      })

      return Issues.of({ list, get, setStatus, events, event, releases, release })
    })
  )
}
