import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { queueHead } from "../../services/webhooks/QueueRows.ts"
import { TestDatabase } from "../support/database.ts"

/**
 * The head of a webhook's queue, read straight from the statement. A claim left by a runner
 * that died (or was stopped) mid-send is due at its claim + the delay after its attempt; when
 * the webhook's retries were lowered since, that attempt has no delay any more.
 */
describe("queueHead", () => {
  it.live("a claim past the webhook's current retries is due at its claim (then failed), not a defect", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const claimedAt = new Date(Date.now() - 60_000)
      // Attempt 3 claimed under `maxRetries` 3, its runner gone; `maxRetries` is now 1 (two delays).
      yield* sql`
        WITH d AS (
          INSERT INTO webhook_deliveries (id, webhook_id, event, payload, status, attempts, next_attempt_at,
            created_at, claimed_at)
          VALUES ('delivery_exhausted', 'webhook_lowered', 'ping', '{}', 'pending', 3,
            ${claimedAt.toISOString()}::timestamptz, ${claimedAt.toISOString()}::timestamptz,
            ${claimedAt.toISOString()}::timestamptz)
          RETURNING webhook_id, next_attempt_at, seq
        )
        INSERT INTO webhook_queue (webhook_id, next_attempt_at, seq) SELECT webhook_id, next_attempt_at, seq FROM d`
      const rows = yield* queueHead(sql, "webhook_lowered", Date.now(), [10_000, 70_000])
      expect(rows.map((row) => ({ id: row.id, attempts: row.attempts, dueAt: Math.round(row.due_at) }))).toEqual([
        { id: "delivery_exhausted", attempts: 3, dueAt: claimedAt.getTime() }
      ])
    }).pipe(Effect.provide(TestDatabase)))
})
