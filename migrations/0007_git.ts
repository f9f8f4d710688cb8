import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Git hosting (GUIDE §8, docs/git-storage.md): repositories, their refs (moved only by
 * compare-and-swap in `RefUpdates`), the immutable packs stored in the BlobStore, and
 * the LFS objects that have been verified.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE repositories (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      slug text NOT NULL,
      description text,
      visibility text NOT NULL DEFAULT 'private',
      default_branch text NOT NULL DEFAULT 'main',
      allow_forking boolean NOT NULL DEFAULT false,
      -- Read-only: pushes are refused (spec "Repository lifecycle").
      archived boolean NOT NULL DEFAULT false,
      -- Bytes of the packs and of the verified LFS objects, kept current by the writers.
      pack_bytes bigint NOT NULL DEFAULT 0,
      lfs_bytes bigint NOT NULL DEFAULT 0,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // Slugs are unique among live repositories; a trashed one frees its name.
  yield* sql`CREATE UNIQUE INDEX repositories_slug_idx ON repositories (org_id, slug) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE repo_refs (
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      name text NOT NULL,
      sha text NOT NULL,
      -- For tags: the commit an annotated tag peels to (NULL when the ref is not a tag).
      peeled text,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (repo_id, name)
    )`
  yield* sql`
    CREATE TABLE repo_packs (
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      -- pack-<sha1 of the pack>; the BlobStore holds repos/<repo>/packs/<name>.pack and .idx
      name text NOT NULL,
      pack_bytes bigint NOT NULL,
      idx_bytes bigint NOT NULL,
      object_count integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (repo_id, name)
    )`
  yield* sql`
    CREATE TABLE lfs_objects (
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      oid text NOT NULL,
      size bigint NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (repo_id, oid)
    )`
  yield* sql`
    CREATE TABLE lfs_locks (
      id text PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      path text NOT NULL,
      owner_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (repo_id, path)
    )`
})
