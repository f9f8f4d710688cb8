import { PgTypes } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import { type Issue, IssueRegressedEvent, IssueStatus, type ListIssuesQuery } from "../../schemas/observe/Observe.ts"
import { appendSelectedStatement, notifySql } from "../events/Events.ts"
import { pgArray } from "../platform/PgArrayParam.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import type { IssueDelta } from "./CommitPlan.ts"

/*
 * The issue tables — `observe_issues`, their buffered counters `observe_issue_pending` and
 * their distinct users `observe_issue_users` — and every statement on them (their one owner).
 * The ingest group commit writes them in its one statement: it composes the fragments below.
 */

/** A stored issue; rows are decoded with it. */
const IssueRow = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  type: Schema.NullOr(Schema.String),
  culprit: Schema.NullOr(Schema.String),
  level: Schema.String,
  status: IssueStatus,
  fingerprint: Schema.String,
  count: Int8,
  users: Int8,
  first_seen: Schema.Date,
  last_seen: Schema.Date,
  first_release: Schema.NullOr(Schema.String),
  last_release: Schema.NullOr(Schema.String),
  releases: Schema.Array(Schema.String),
  environments: Schema.Array(Schema.String),
  resolved_at: Schema.NullOr(Schema.Date)
})
type IssueRow = typeof IssueRow.Type

export const toIssue = (row: IssueRow): Issue => ({
  id: row.id,
  title: row.title,
  type: row.type,
  culprit: row.culprit,
  level: row.level,
  status: row.status,
  fingerprint: row.fingerprint,
  count: row.count,
  users: row.users,
  firstSeen: row.first_seen.toISOString(),
  lastSeen: row.last_seen.toISOString(),
  firstRelease: row.first_release,
  lastRelease: row.last_release,
  releases: row.releases,
  environments: row.environments,
  resolvedAt: row.resolved_at?.toISOString() ?? null
})

const IssuePageRow = Schema.Struct({ ...IssueRow.fields, total: Int8 })
const Count = Schema.Struct({ n: Int8 })
const IssueRef = Schema.Struct({ id: Schema.String })
const IssueOfFingerprint = Schema.Struct({ id: Schema.String, fingerprint: Schema.String })
const IssueTitle = Schema.Struct({ title: Schema.String })

const sortColumns = { lastSeen: "last_seen", firstSeen: "first_seen", count: "count" } as const

/** A page of an organization's issues by the query's filters and sort, and how many match. */
export const listIssues = (sql: SqlClient.SqlClient, orgId: string, query: ListIssuesQuery) =>
  Effect.gen(function*() {
    const filters = [
      sql`org_id = ${orgId}`,
      ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
      ...(query.level === undefined ? [] : [sql`level = ${query.level}`]),
      ...(query.release === undefined ? [] : [sql`${query.release} = ANY(releases)`]),
      ...(query.environment === undefined ? [] : [sql`${query.environment} = ANY(environments)`])
    ]
    const where = sql.and(filters)
    const order = sql.unsafe(sortColumns[query.sort ?? "lastSeen"])
    const rows = yield* sql`
      SELECT *, count(*) OVER () AS total FROM observe_issues WHERE ${where}
      ORDER BY ${order} DESC, id DESC LIMIT ${query.limit ?? 50} OFFSET ${query.offset ?? 0}`.pipe(
      decodeRows(IssuePageRow)
    )
    // A page past the end carries no total: count apart.
    const count = rows.length > 0
      ? rows[0].total
      : (yield* sql`SELECT count(*) AS n FROM observe_issues WHERE ${where}`.pipe(decodeRows(Count)))[0].n
    return { rows, count }
  })

export const findIssue = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`SELECT * FROM observe_issues WHERE id = ${id} AND org_id = ${orgId}`.pipe(
    decodeRows(IssueRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

/** Sets an issue's status (a resolve keeps its first time); the issue as changed, if it exists. */
export const setIssueStatus = (sql: SqlClient.SqlClient, orgId: string, id: string, status: IssueStatus) =>
  sql`
    UPDATE observe_issues SET status = ${status},
      resolved_at = CASE WHEN ${status} = 'resolved' THEN coalesce(resolved_at, now()) ELSE NULL END
    WHERE id = ${id} AND org_id = ${orgId} RETURNING *`.pipe(
    decodeRows(IssueRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

/** The issues that exist for these fingerprints. */
export const issuesOfFingerprints = (sql: SqlClient.SqlClient, orgId: string, fingerprints: ReadonlyArray<string>) =>
  sql`
    SELECT id, fingerprint FROM observe_issues
    WHERE org_id = ${orgId} AND fingerprint = ANY(${fingerprints})`.pipe(
    decodeRows(IssueOfFingerprint)
  )

export const issueTitle = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT title FROM observe_issues WHERE id = ${id}`.pipe(
    decodeRows(IssueTitle),
    Effect.map((rows) => Option.fromNullishOr(rows[0]?.title))
  )

/**
 * Folds an organization's buffered issue counters (`observe_issue_pending`, one row per
 * ingest commit: `bufferCountersStatement`) into its issue rows, in one statement; the
 * ids of the issues it reopened:
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
  sql`
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
    FROM updated u WHERE u.regressed`.pipe(decodeRows(IssueRef), Effect.map((rows) => rows.map((row) => row.id)))

/*
 * The ingest group commit's issue parts (`IngestWriter`), as the CTEs of its one statement
 * (their names are the caller's): `missing`, `seen` (with `new_users`, its count per issue),
 * `pending` and `upserted`, in that order.
 */

const textArray = (values: ReadonlyArray<string | null>) => pgArray(values, PgTypes.OID.text)

const knownIds = (issues: ReadonlyArray<IssueDelta>) => issues.flatMap((issue) => issue.isNew ? [] : [issue.id])

/**
 * `missing`: the commit's known issues whose row is gone (issues go only with their
 * organization; should one vanish anyway), as one array `ids`.
 */
export const missingIssuesStatement = (sql: SqlClient.SqlClient, issues: ReadonlyArray<IssueDelta>) =>
  sql`
    SELECT coalesce(array_agg(k.id), '{}') AS ids
    FROM unnest(${textArray(knownIds(issues))}::text[]) AS k(id)
    WHERE NOT EXISTS (SELECT 1 FROM observe_issues i WHERE i.id = k.id)`

/** `seen`: the issue × user pairs not known to be stored; returns the issue of each first sighting. */
export const recordIssueUsersStatement = (
  sql: SqlClient.SqlClient,
  users: ReadonlyArray<{ readonly issue_id: string; readonly user_key: string }>
) =>
  sql`
    INSERT INTO observe_issue_users (issue_id, user_key)
    SELECT u.issue_id, u.user_key
    FROM json_to_recordset(${JSON.stringify(users)}::json) AS u(issue_id text, user_key text)
    ON CONFLICT DO NOTHING
    RETURNING issue_id`

/**
 * The counter deltas of the issues the entity knows exist, as buffered for the fold
 * (`foldIssueCounters` reads these keys); null when there are none.
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

/**
 * `pending`: the known issues' counter deltas as one buffered row, folded into the issue
 * rows later in bulk (`foldIssueCounters`); none when every issue is new. Reads `missing`, `seen`.
 */
export const bufferCountersStatement = (sql: SqlClient.SqlClient, orgId: string, issues: ReadonlyArray<IssueDelta>) => {
  const knownDeltas = knownDeltasJson(issues)
  return sql`
    -- First sightings of users of known issues are counted by the fold (one id each).
    INSERT INTO observe_issue_pending (org_id, deltas, users, missing)
    SELECT ${orgId}, ${knownDeltas}::json,
      (SELECT coalesce(array_agg(s.issue_id), '{}') FROM seen s
        WHERE s.issue_id = ANY(${textArray(knownIds(issues))}::text[]) AND NOT s.issue_id = ANY(m.ids)),
      m.ids
    FROM missing m
    WHERE ${knownDeltas !== null}`
}

/** `ord` keeps the plan's sorted order through the join (row locks in one order). */
const issueJson = (issue: IssueDelta, ord: number) => ({
  ...issue,
  ord,
  releases: [...issue.releases],
  environments: [...issue.environments]
})

/**
 * `upserted`: inserts the new issues, and the missing ones again from the commit's own
 * delta, once `after` holds; returns each with whether it was inserted or reopened. Reads
 * `new_users`, `missing`.
 */
export const upsertIssuesStatement = (
  sql: SqlClient.SqlClient,
  orgId: string,
  issues: ReadonlyArray<IssueDelta>,
  after: Statement.Fragment
) =>
  sql`
    INSERT INTO observe_issues AS i (id, org_id, fingerprint, title, type, culprit, level, count, users,
      first_seen, last_seen, first_release, last_release, releases, environments)
    SELECT v.id, ${orgId}, v.fingerprint, v.title, v.type, v.culprit, v.level, v.count, coalesce(n.n, 0),
      to_timestamp(v.first / 1000.0), to_timestamp(v.last / 1000.0), v."firstRelease", v."lastRelease",
      v.releases, v.environments
    FROM json_to_recordset(${JSON.stringify(issues.map(issueJson))}::json)
      AS v(id text, fingerprint text, title text, type text, culprit text, level text,
        count bigint, first float8, last float8, "firstRelease" text, "lastRelease" text, releases text[],
        environments text[], "isNew" boolean, ord int)
    LEFT JOIN new_users n ON n.issue_id = v.id
    WHERE ${after}
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
    RETURNING id, fingerprint, (xmax = 0) AS inserted, coalesce(regressed_at = now(), false) AS regressed`
