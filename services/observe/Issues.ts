import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import {
  type Issue,
  type IssueStatus,
  IssueUpdatedEvent,
  type ListIssuesQuery,
  type Release,
  type StoredEvent
} from "../../schemas/observe/Observe.ts"
import { NotFound } from "../../schemas/platform/Errors.ts"
import { publish } from "../events/Events.ts"
import { inTransaction } from "../platform/Rows.ts"
import { countIssueEvents, findEvent, issueEvents } from "./EventRows.ts"
import { findIssue, foldIssueCounters, listIssues, setIssueStatus, toIssue } from "./IssueRows.ts"
import { findRelease, listReleases } from "./ReleaseRows.ts"

/**
 * Reading what ingestion wrote (GUIDE §7): issues with their counters, their kept
 * events, single events and releases; and changing an issue's status. Another
 * organization's issue, event or release answers 404. Counters are buffered by ingestion
 * (`foldIssueCounters`): every read of issues and every status change folds them first, so a read
 * after a 202 shows that event counted.
 */

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
        const { count, rows } = yield* listIssues(sql, orgId, query).pipe(Effect.orDie)
        return { issues: rows.map(toIssue), count }
      })

      const get = Effect.fn("Issues.get")(function*(orgId: string, id: string) {
        yield* fold(orgId)
        const row = yield* findIssue(sql, orgId, id).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* issueNotFound(id)
        return toIssue(row.value)
      })

      const setStatus = Effect.fn("Issues.setStatus")(function*(orgId: string, id: string, status: IssueStatus) {
        const row = yield* inTransaction(
          sql,
          Effect.gen(function*() {
            // Events committed before the change are folded before it: they never regress a resolve.
            yield* foldIssueCounters(sql, orgId)
            const row = yield* setIssueStatus(sql, orgId, id, status)
            if (Option.isSome(row)) yield* publish(IssueUpdatedEvent.make(orgId, { issueId: id, status }))
            return row
          })
        )
        if (Option.isNone(row)) return yield* issueNotFound(id)
        return toIssue(row.value)
      })

      const events = Effect.fn("Issues.events")(
        function*(orgId: string, issueId: string, page: { readonly limit?: number; readonly offset?: number }) {
          const issue = yield* get(orgId, issueId)
          const events = yield* issueEvents(sql, orgId, issueId, {
            limit: page.limit ?? 50,
            offset: page.offset ?? 0
          }).pipe(Effect.orDie)
          const count = yield* countIssueEvents(sql, issue.id).pipe(Effect.orDie)
          return { events, count }
        }
      )

      const event = Effect.fn("Issues.event")(function*(orgId: string, id: string) {
        const found = yield* findEvent(sql, orgId, id).pipe(Effect.orDie)
        if (Option.isNone(found)) return yield* new NotFound({ message: `Event '${id}' not found` })
        return found.value
      })

      const releases = Effect.fn("Issues.releases")(function*(orgId: string) {
        const releases = yield* listReleases(sql, orgId).pipe(Effect.orDie)
        return { releases, count: releases.length }
      })

      const release = Effect.fn("Issues.release")(function*(orgId: string, version: string) {
        const found = yield* findRelease(sql, orgId, version).pipe(Effect.orDie)
        if (Option.isNone(found)) return yield* new NotFound({ message: `Release '${version}' not found` })
        return found.value
      })

      return Issues.of({ list, get, setStatus, events, event, releases, release })
    })
  )
}
