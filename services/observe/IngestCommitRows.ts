import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { IssueCreatedEvent, IssueRegressedEvent } from "../../schemas/observe/Observe.ts"
import { appendSelectedStatement, notifySql } from "../events/Events.ts"
import { decodeRows } from "../platform/Rows.ts"
import type { CommitPlan } from "./CommitPlan.ts"
import { insertEventsStatement, insertStacksStatement } from "./EventRows.ts"
import { saveIngestWindowStatement } from "./IngestWindowRows.ts"
import {
  bufferCountersStatement,
  missingIssuesStatement,
  recordIssueUsersStatement,
  upsertIssuesStatement
} from "./IssueRows.ts"
import { upsertReleasesStatement } from "./ReleaseRows.ts"
import type { SamplingWindow } from "./Sampling.ts"

/*
 * The one statement of an ingest group commit (see `IngestWriter`): each table's part is its
 * owner's (`IssueRows`, `EventRows`, `ReleaseRows`, `IngestWindowRows`); this file puts them
 * in order.
 */

/** A row the commit returns for each issue it inserted or created again. */
const UpsertedIssue = Schema.Struct({ id: Schema.String, inserted: Schema.Boolean, regressed: Schema.Boolean })

/** The commit of `plan` as one statement; returns every upserted issue's row. */
export const ingestCommitStatement = (
  sql: SqlClient.SqlClient,
  orgId: string,
  plan: CommitPlan,
  window: SamplingWindow
) => {
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
  return sql`
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
}
