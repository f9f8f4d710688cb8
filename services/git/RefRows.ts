import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `repo_refs` table (the truth about refs; the cached folders copy it): its rows and
 * every statement on it. Refs move only through `RefUpdates`, which runs the writes in its
 * transaction under the repository's row lock.
 */

/** A ref as stored in Postgres. */
export const StoredRef = Schema.Struct({ name: Schema.String, sha: Schema.String })
export type StoredRef = typeof StoredRef.Type

/** A tag, with the commit an annotated tag peels to (null for a lightweight one). */
const TagRef = Schema.Struct({ ...StoredRef.fields, peeled: Schema.NullOr(Schema.String) })

/** Every ref of a repository. */
export const storedRefs = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT name, sha FROM repo_refs WHERE repo_id = ${repoId}`.pipe(decodeRows(StoredRef))

/** The branches (`refs/heads/…`), by name. */
export const branchRefs = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT name, sha FROM repo_refs WHERE repo_id = ${repoId} AND name LIKE 'refs/heads/%' ORDER BY name`.pipe(
    decodeRows(StoredRef)
  )

/** The tags (`refs/tags/…`), by name. */
export const tagRefs = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT name, sha, peeled FROM repo_refs WHERE repo_id = ${repoId} AND name LIKE 'refs/tags/%' ORDER BY name`
    .pipe(decodeRows(TagRef))

const ShaRow = Schema.Struct({ sha: Schema.String })

/** Where a branch points (none: no such branch). */
export const branchSha = (sql: SqlClient.SqlClient, repoId: string, branch: string) =>
  sql`SELECT sha FROM repo_refs WHERE repo_id = ${repoId} AND name = ${`refs/heads/${branch}`}`.pipe(
    decodeRows(ShaRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]?.sha))
  )

/** Deletes refs by name: one statement for a whole push. */
export const deleteRefs = (sql: SqlClient.SqlClient, repoId: string, names: ReadonlyArray<string>) =>
  names.length === 0 ? Effect.void : Effect.asVoid(
    sql`DELETE FROM repo_refs WHERE repo_id = ${repoId} AND name = ANY(${names}::text[])`
  )

/** A ref to create or move (`peeled`: the commit of a tag, else null). */
export interface RefWrite {
  readonly name: string
  readonly sha: string
  readonly peeled: string | null
}

/** Creates or moves refs: one statement for a whole push. */
export const upsertRefs = (sql: SqlClient.SqlClient, repoId: string, refs: ReadonlyArray<RefWrite>) =>
  refs.length === 0 ? Effect.void : Effect.asVoid(sql`
    INSERT INTO repo_refs (repo_id, name, sha, peeled)
    SELECT ${repoId}, u.name, u.sha, NULLIF(u.peeled, '')
    FROM unnest(${refs.map((ref) => ref.name)}::text[], ${refs.map((ref) => ref.sha)}::text[],
      ${refs.map((ref) => ref.peeled ?? "")}::text[]) AS u(name, sha, peeled)
    ON CONFLICT (repo_id, name) DO UPDATE SET sha = excluded.sha, peeled = excluded.peeled, updated_at = now()`)
