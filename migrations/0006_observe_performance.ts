import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Source maps, spans and their hourly latency rollups (GUIDE §7). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE source_maps (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      release text NOT NULL,
      -- The minified file's name as uploaded (URL, path, ~/path or basename), query and .map dropped.
      name text NOT NULL,
      size integer NOT NULL,
      blob_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (org_id, release, name)
    )`
  yield* sql`CREATE INDEX source_maps_org_idx ON source_maps (org_id, created_at DESC)`
  yield* sql`
    CREATE TABLE spans (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      trace_id text NOT NULL,
      span_id text NOT NULL,
      parent_id text,
      name text NOT NULL,
      duration_ms double precision NOT NULL,
      is_error boolean NOT NULL,
      started_at timestamptz NOT NULL,
      release text,
      environment text
    )`
  yield* sql`CREATE INDEX spans_org_time_idx ON spans (org_id, started_at DESC)`
  yield* sql`CREATE INDEX spans_trace_idx ON spans (org_id, trace_id)`
  // One row per organization, UTC hour (or day), span name, release and environment ('' when
  // unset). `sketch` maps log-bucket index → count (see services/observe/LatencySketch.ts).
  // Ingest writes hourly rows; a closed day is folded into daily rows once, when statistics
  // first need it (see services/observe/Performance.ts).
  for (const table of ["span_rollups_hourly", "span_rollups_daily"]) {
    yield* sql`
      CREATE TABLE ${sql(table)} (
        org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        bucket timestamptz NOT NULL,
        name text NOT NULL,
        release text NOT NULL,
        environment text NOT NULL,
        span_count bigint NOT NULL,
        error_count bigint NOT NULL,
        duration_sum double precision NOT NULL,
        sketch jsonb NOT NULL,
        PRIMARY KEY (org_id, bucket, name, release, environment)
      )`
  }
  // The closed days of an organization already folded into `span_rollups_daily`.
  yield* sql`
    CREATE TABLE span_days_compacted (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      day timestamptz NOT NULL,
      PRIMARY KEY (org_id, day)
    )`
  // Adds sketch `b` (a batch's: few buckets) into `a` (a rollup's: many) bucket by bucket,
  // touching only b's buckets, so concurrent writers merge in the upsert without reading first.
  yield* sql`
    CREATE FUNCTION latency_sketch_merge(a jsonb, b jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT a || coalesce(jsonb_object_agg(key, coalesce((a ->> key)::bigint, 0) + value::bigint), '{}'::jsonb)
      FROM jsonb_each_text(b)
    $$`
  yield* sql`
    CREATE AGGREGATE latency_sketch_sum(jsonb) (
      SFUNC = latency_sketch_merge, STYPE = jsonb, INITCOND = '{}'
    )`
})
