import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { IssueRegressedEvent } from "../../schemas/Observe.ts"
import { appendSelectedStatement, notifySql } from "../platform/Events.ts"

/**
 * Folds an organization's buffered issue counters (`observe_issue_pending`, one row per
 * ingest commit, written by `IngestWriter`) into its issue rows, in one statement:
 *
 * - `DELETE … RETURNING` takes the rows, so two folds never apply a row twice. The rows are
 *   locked in id order first, so concurrent folds of one organization queue on its oldest
 *   row; a fold that waited skips what the other deleted, and its issue updates build on
 *   the other's committed counters (Postgres re-reads an updated row before updating it).
 * - Deltas are summed per issue in commit order: count, first sightings of users, last
 *   seen, the latest level and last release, the first release (kept once set), the union
 *   of releases and environments.
 * - A resolved issue with folded events regresses (`observe.issue.regressed`, appended in
 *   the statement, with its NOTIFY only when there are any); an ignored one stays ignored.
 *   Every status change folds first (`Issues.setStatus`), so the deltas folded here were
 *   committed after the issue was resolved.
 * - Deltas of an issue its commit found missing are skipped (that commit created the issue
 *   again from them); deltas of an issue deleted after its commit find no row and are dropped.
 *
 * The ingest commit never updates a known issue's row, so a fold and a commit take no lock
 * in common but the foreign-key share lock of `observe_issue_users`, which an update of
 * counters does not conflict with.
 */
export const foldIssueCounters = (
  sql: SqlClient.SqlClient,
  orgId: string
): Effect.Effect<ReadonlyArray<string>, SqlError> =>
  sql<{ id: string }>`
    WITH locked AS (
      SELECT id FROM observe_issue_pending WHERE org_id = ${orgId} ORDER BY id FOR UPDATE
    ), taken AS (
      DELETE FROM observe_issue_pending p USING locked l
      WHERE p.org_id = ${orgId} AND p.id = l.id
      RETURNING p.id, p.deltas, p.users, p.missing
    ), d AS (
      SELECT t.id AS seq, v.*
      FROM taken t CROSS JOIN LATERAL json_to_recordset(t.deltas) AS v(id text, count bigint, level text,
        last float8, "firstRelease" text, "lastRelease" text, releases text[], environments text[])
      -- Issues found missing by their commit were created again from its delta.
      WHERE NOT v.id = ANY(t.missing)
    ), seen AS (
      SELECT u.id, count(*) AS users FROM taken t CROSS JOIN LATERAL unnest(t.users) AS u(id) GROUP BY u.id
    ), totals AS (
      SELECT id, sum(count) AS count, max(last) AS last,
        (array_agg(level ORDER BY seq DESC))[1] AS level,
        (array_agg("firstRelease" ORDER BY seq) FILTER (WHERE "firstRelease" IS NOT NULL))[1] AS first_release,
        (array_agg("lastRelease" ORDER BY seq DESC) FILTER (WHERE "lastRelease" IS NOT NULL))[1] AS last_release
      FROM d GROUP BY id
    ), releases AS (
      SELECT d.id, array_agg(DISTINCT r) AS releases FROM d CROSS JOIN LATERAL unnest(d.releases) AS r GROUP BY d.id
    ), environments AS (
      SELECT d.id, array_agg(DISTINCT e) AS environments
      FROM d CROSS JOIN LATERAL unnest(d.environments) AS e GROUP BY d.id
    ), updated AS (
      UPDATE observe_issues AS i SET
        count = i.count + t.count,
        users = i.users + coalesce(s.users, 0),
        level = t.level,
        last_seen = greatest(i.last_seen, to_timestamp(t.last / 1000.0)),
        last_release = coalesce(t.last_release, i.last_release),
        first_release = coalesce(i.first_release, t.first_release),
        releases = CASE WHEN r.releases IS NULL OR r.releases <@ i.releases THEN i.releases
          ELSE ARRAY(SELECT DISTINCT unnest(i.releases || r.releases)) END,
        environments = CASE WHEN e.environments IS NULL OR e.environments <@ i.environments THEN i.environments
          ELSE ARRAY(SELECT DISTINCT unnest(i.environments || e.environments)) END,
        -- A new event of a resolved issue regresses it (ignored stays ignored).
        status = CASE WHEN i.status = 'resolved' THEN 'unresolved' ELSE i.status END,
        resolved_at = CASE WHEN i.status = 'resolved' THEN NULL ELSE i.resolved_at END,
        regressed_at = CASE WHEN i.status = 'resolved' THEN now() ELSE i.regressed_at END
      FROM totals t LEFT JOIN seen s ON s.id = t.id LEFT JOIN releases r ON r.id = t.id
        LEFT JOIN environments e ON e.id = t.id
      WHERE i.id = t.id AND i.org_id = ${orgId}
      RETURNING i.id, coalesce(i.regressed_at = now(), false) AS regressed
    ), appended AS (${
    appendSelectedStatement(
      sql,
      sql`SELECT ${IssueRegressedEvent.type}, ${orgId}, jsonb_build_object('issueId', u.id)
        FROM updated u WHERE u.regressed ORDER BY u.id`
    )
  })
    -- Only regressed rows are returned: the notification is evaluated whenever events were appended.
    SELECT u.id, ${notifySql(sql, "appended")} AS notified
    FROM updated u WHERE u.regressed`.pipe(Effect.map((rows) => rows.map((row) => row.id)))
