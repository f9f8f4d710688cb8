import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { IssueCreatedEvent, IssueRegressedEvent } from "../../schemas/observe/Observe.ts"
import { appendSelectedStatement, notifySql } from "../events/Events.ts"
import { decodeRows } from "../platform/Rows.ts"
import type { CommitPlan } from "./CommitPlan.ts"
import { insertEventsStatement, insertStacksStatement } from "./EventRows.ts"
import { saveIngestWindowStatement } from "./IngestWindowRows.ts"
import {
  bufferCountersStatement,
  issuesOfFingerprints,
  missingIssuesStatement,
  recordIssueUsersStatement,
  upsertIssuesStatement
} from "./IssueRows.ts"
import { Performance } from "./Performance.ts"
import { upsertReleasesStatement } from "./ReleaseRows.ts"
import type { SamplingWindow } from "./Sampling.ts"

/**
 * One group commit of an organization's ingest entity (a `CommitPlan`) in one statement
 * whatever the number of events (events travel as one typed array per column, expanded by
 * `unnest`; the other kinds, few rows each, as one JSON document per kind, expanded by
 * `json_to_recordset`): new stacks, kept events, distinct users, new issues (inserted, with
 * `observe.issue.created` appended to the outbox by the statement, with its NOTIFY only when
 * there are any), the counter deltas of the issues that exist (one buffered row, folded into
 * the issue rows later in bulk: `foldIssueCounters`), releases, the sampling window. Without spans
 * that statement is the whole commit and runs alone, atomic as its own transaction: no
 * `BEGIN` and `COMMIT` round trips, each of which waited for a busy event loop. With spans,
 * the statement and `Performance.recordSpans` share one transaction.
 *
 * The entity runs one commit of an organization at a time, so the counter rows are never
 * contended; their rows are still sorted (see `CommitPlan`) should two ever meet.
 *
 * Each table's part of the statement is its owner's (`IssueRows`, `EventRows`,
 * `ReleaseRows`, `IngestWindowRows`); this file puts them in order.
 */

/** A row the commit returns for each issue it inserted or created again. */
const UpsertedIssue = Schema.Struct({ id: Schema.String, inserted: Schema.Boolean, regressed: Schema.Boolean })

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
          : issuesOfFingerprints(sql, orgId, fingerprints)

      const write = (orgId: string, plan: CommitPlan, window: SamplingWindow) =>
        Effect.gen(function*() {
          // One statement for every row kind (a round trip each cost more than the rows). Its
          // parts run in one order for every commit: the uncontended stacks and events first
          // (the main query's one-time filter counts them, so it waits for them), then the
          // distinct users and new issues (the main query), then releases and the sampling
          // window (run after it). Rows of each kind are sorted by key, so concurrent commits
          // take their row locks in one order, and the contended counter rows are locked late.
          // Known issues' rows are not written: their deltas go to one buffered row, unless the
          // row is missing (issues go only with their organization; should one vanish anyway),
          // which the upsert creates again from the commit's own delta.
          const afterStacksAndEvents = sql`(SELECT count(*) FROM stacks) + (SELECT count(*) FROM events) >= 0`
          const statement = sql`
            WITH missing AS (${missingIssuesStatement(sql, plan.issues)}),
            stacks AS (${insertStacksStatement(sql, orgId, plan.stacks)}),
            events AS (${insertEventsStatement(sql, orgId, plan.kept)}),
            releases AS (${upsertReleasesStatement(sql, orgId, plan.releases)}),
            sampling AS (${saveIngestWindowStatement(sql, orgId, window)}),
            seen AS (${recordIssueUsersStatement(sql, plan.users)}),
            new_users AS (SELECT issue_id, count(*) AS n FROM seen GROUP BY issue_id),
            pending AS (${bufferCountersStatement(sql, orgId, plan.issues)}),
            upserted AS (${upsertIssuesStatement(sql, orgId, plan.issues, afterStacksAndEvents)}),
            appended AS (${
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
            FROM upserted u`.pipe(decodeRows(UpsertedIssue))
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
