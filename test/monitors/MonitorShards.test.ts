import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { EntityId, Sharding } from "effect/cluster"
import { shardsPerGroup } from "../../layers/Cluster.ts"
import { CheckRecorder } from "../../services/monitors/CheckRecorder.ts"
import { Monitor } from "../../services/monitors/MonitorProtocol.ts"
import { startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/** The sweep reads only the monitors of the shards its runner holds, once their shard is known. */
describe("monitor shards", () => {
  it.live("the sweep records each monitor's shard; a runner's read is limited to its shards", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const recorder = Context.get(app.context, CheckRecorder)
      const sharding = Context.get(app.context, Sharding.Sharding)
      yield* app.sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_shards', 'shards', 'S', 'free')`
      // Due in an hour, so no check runs meanwhile; shards unknown (NULL) as after an insert.
      yield* app.sql`
        INSERT INTO monitors (id, org_id, name, url, next_check_at)
        SELECT 'mon_shard_' || i, 'org_shards', 'm' || i, 'http://127.0.0.1:9/', now() + interval '1 hour'
        FROM generate_series(1, 30) AS i`
      const shardOf = (id: string) =>
        sharding.getShardId(EntityId.make(id), Monitor.getShardGroup(EntityId.make(id))).id

      // The running sweep fills in every monitor's shard, as the cluster computes it.
      const rows = yield* eventually(
        "shards recorded",
        app.sql<{ id: string; shard: number | null; shardCount: number | null }>`
          SELECT id, shard, shard_count AS "shardCount" FROM monitors WHERE org_id = 'org_shards' ORDER BY id`,
        (rows) => rows.every((row) => row.shard !== null)
      )
      expect(rows.every((row) => row.shard === shardOf(row.id) && row.shardCount === shardsPerGroup)).toBe(true)

      // A read for some shards returns exactly their monitors…
      const some = [...new Set(rows.slice(0, 5).map((row) => row.shard!))]
      const read = yield* recorder.activeSchedules(some, shardsPerGroup)
      expect(read.map((schedule) => schedule.id).sort()).toEqual(
        rows.filter((row) => some.includes(row.shard!)).map((row) => row.id).sort()
      )
      expect(read.every((schedule) => schedule.shard !== null)).toBe(true)
      // …and after a change of the shard count every monitor is read again, to be reassigned.
      const recount = yield* recorder.activeSchedules(some, 512)
      expect(recount.filter((schedule) => schedule.id.startsWith("mon_shard_")).length).toBe(30)
      expect(recount.every((schedule) => schedule.shard === null)).toBe(true)
    }).pipe(Effect.scoped))
})
