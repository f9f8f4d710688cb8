import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { readAfter, readAfterStatement } from "../../services/events/EventLog.ts"
import { TestDatabase } from "../support/database.ts"
import { eventually } from "../support/wait.ts"

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/**
 * The outbox only grows (every monitor check publishes a heartbeat), and every runner reads
 * it up to a hundred times a second: a read that scanned the table cost more with every event
 * ever published (1.7 ms per read at 6,000 events: the largest cost of Postgres in `bench:monitors`).
 */
describe("the outbox read", () => {
  it.live("walks the (tx, id) index from a known end, whatever the outbox's size", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // Heartbeats, each check its own transaction (spread over the transaction ids below this
      // one), and no statistics yet: under constant inserts the planner's always lag behind.
      yield* sql`
        INSERT INTO domain_events (type, data, tx)
        SELECT 'monitor.heartbeat', jsonb_build_object('n', i), 1 + i * (pg_current_xact_id()::text::bigint - 2) / 20000
        FROM generate_series(1, 20000) AS i`
      const [newest] = yield* sql<{ tx: string; id: string }>`
        SELECT e.tx::text AS tx, e.id::text AS id FROM domain_events AS e ORDER BY e.tx DESC, e.id DESC LIMIT 1`
      const after = { tx: BigInt(newest.tx), id: BigInt(newest.id) }

      // As the shared read and the live reader ask: the horizon taken by the statement itself.
      const [text, params] = readAfterStatement(sql, { after, limit: 1000 }).compile()
      const [explained] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        params
      )
      const scans = nodesOf(explained["QUERY PLAN"][0].Plan)
        .filter((node) => node["Relation Name"] === "domain_events")
        .map((node) => node["Node Type"])
      expect(scans.length).toBeGreaterThan(0)
      expect(scans).not.toContain("Seq Scan")

      // And it reads as before: ten more events, committed in a transaction of their own, once
      // no transaction of the run's other tests holds the horizon below them.
      yield* sql`
        INSERT INTO domain_events (type, data)
        SELECT 'monitor.heartbeat', jsonb_build_object('n', i) FROM generate_series(20001, 20010) AS i`
      const read = yield* eventually(
        "the ten new events below the horizon",
        readAfter(sql, { after, limit: 1000 }),
        (read) => read.events.length === 10 && !read.held
      )
      expect(read.events.map((positioned) => positioned.event.data)).toEqual(
        Array.from({ length: 10 }, (_, i) => ({ n: 20001 + i }))
      )
      expect(read.full).toBe(false)
      expect(read.head).toEqual(read.events[9].position)
    }).pipe(Effect.provide(TestDatabase)))
})
