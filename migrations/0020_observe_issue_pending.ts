import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Buffered issue counters (Sentry's "buffer"): each ingest group commit appends the counter
 * deltas of the issues that already exist as one row here (one JSON document per commit),
 * in the commit's own statement, instead of updating ~one issue row per event. A fold
 * (`services/observe/IssueFold.ts`) deletes an organization's rows and applies them to the
 * issue rows in bulk: by the ingest entity about once a second, and before every read of
 * counters. The column is stored out of line uncompressed: it is written once and read once.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE observe_issue_pending (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id bigserial,
      -- The commit's known issues: id, count, level, last (ms), first/last release, releases, environments.
      deltas json NOT NULL,
      -- One issue id per first sighting of a user (inserted into observe_issue_users by the commit).
      users text[] NOT NULL,
      -- Known issues found deleted: the commit created them again with their delta, so the fold skips them.
      missing text[] NOT NULL,
      PRIMARY KEY (org_id, id)
    )`
  yield* sql`ALTER TABLE observe_issue_pending ALTER COLUMN deltas SET STORAGE EXTERNAL`
})
