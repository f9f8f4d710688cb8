import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { CommitPlan } from "./CommitPlan.ts"
import { ingestCommitStatement } from "./IngestCommitRows.ts"
import { issuesOfFingerprints } from "./IssueRows.ts"
import { Performance } from "./Performance.ts"
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
 * The statement is `IngestCommitRows.ts`'s; this service runs it.
 */

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
          const statement = ingestCommitStatement(sql, orgId, plan, window)
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
