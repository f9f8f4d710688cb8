import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Conflict } from "../../schemas/platform/Errors.ts"
import { Events } from "../../services/events/Events.ts"
import { Mailer } from "../../services/mail/Mailer.ts"
import { OutboundGuard } from "../../services/outbound/OutboundGuard.ts"
import { AppConfig } from "../../services/platform/AppConfig.ts"
import { Crypto } from "../../services/platform/Crypto.ts"
import { Deliveries } from "../../services/webhooks/Deliveries.ts"
import { Dispatcher } from "../../services/webhooks/Dispatcher.ts"
import { FanOut } from "../../services/webhooks/FanOut.ts"
import { deliveryRetentionDays } from "../../services/webhooks/Limits.ts"
import { Webhooks } from "../../services/webhooks/Webhooks.ts"
import { WebhookDeliveryLive } from "../../src/entities/webhooks/WebhookDelivery.ts"
import { testConfig } from "../support/app.ts"
import { createTestDatabase, databaseUnderTestClock } from "../support/database.ts"
import { eventuallySettled as eventually, stays } from "../support/wait.ts"
import { startReceiver } from "./receiver.ts"

/**
 * The webhook entity's retry schedule under TestClock: the real entity (effect/cluster
 * `TestRunner`), the real services on a fresh database, a real receiver. Time moves only
 * when the test adjusts the clock; after each step the test waits in real time for effects.
 */

const build = Effect.gen(function*() {
  // Start at the real time: rows written by Postgres defaults must not be in the clock's future.
  yield* TestClock.setTime(Date.now())
  const url = yield* createTestDatabase
  const outbox = yield* Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-outbox-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )
  const config = testConfig(url, { dataDir: outbox })
  const layer = WebhookDeliveryLive({ sweepInterval: "1 hour" }).pipe(
    Layer.provideMerge(Layer.mergeAll(Dispatcher.layer, FanOut.layer)),
    Layer.provideMerge(Layer.mergeAll(Webhooks.layer, Deliveries.layer)),
    Layer.provideMerge(Layer.mergeAll(
      OutboundGuard.layerFromConfig,
      Events.layer,
      Crypto.layer(new Uint8Array(32).fill(7)),
      Mailer.layerOutbox({ dir: outbox, from: "Canopy <canopy@test>" })
    )),
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(databaseUnderTestClock(url, 8)),
    Layer.provideMerge(AppConfig.layerWith(config))
  )
  const context = yield* Layer.build(layer)
  const sql = Context.get(context, SqlClient.SqlClient)
  const orgId = "org_webhook_schedule"
  yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES (${orgId}, 'schedule', 'Schedule', 'free')`
  yield* sql`INSERT INTO users (id, username, email) VALUES ('usr_owner', 'owner', 'owner@example.com')`
  yield* sql`INSERT INTO memberships (org_id, user_id, role) VALUES (${orgId}, 'usr_owner', 'owner')`
  const scope = { orgId, repoId: null }
  const attempts = (webhookId: string) =>
    sql<{ attempt: number; startedAt: string; status: string }>`
      SELECT a.attempt, extract(epoch FROM a.started_at) * 1000 AS "startedAt", d.status
      FROM webhook_attempts a JOIN webhook_deliveries d ON d.seq = a.delivery_seq
      WHERE d.webhook_id = ${webhookId} ORDER BY a.started_at, a.attempt`.pipe(
      Effect.map((rows) => rows.map((row) => ({ ...row, startedAt: Number(row.startedAt) }))),
      Effect.orDie
    )
  /** Moves the start of the webhook's failure streak back by `interval` (a Postgres interval). */
  const backdateStreak = (webhookId: string, interval: string) =>
    Effect.orDie(sql`
      UPDATE webhooks SET failing_since = failing_since - ${interval}::interval WHERE id = ${webhookId}`)
  const deliveries = Context.get(context, Deliveries)
  return {
    sql,
    backdateStreak,
    prune: (now: number) => deliveries.prune(deliveryRetentionDays, now),
    scope,
    outbox,
    attempts,
    webhooks: Context.get(context, Webhooks),
    fanOut: Context.get(context, FanOut)
  }
})

describe("webhook retry schedule (TestClock)", () => {
  it.effect("attempt 1 at once, then after retryIntervalSeconds × 1, 2, 5, 10, up to maxRetries", () =>
    Effect.gen(function*() {
      const t = yield* build
      const receiver = yield* startReceiver(() => 500)
      const hook = yield* t.webhooks.create(t.scope, {
        url: receiver.url(),
        events: ["*"],
        maxRetries: 4,
        retryIntervalSeconds: 10
      }).pipe(Effect.orDie)
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      const [first] = yield* eventually("attempt 1", t.attempts(hook.id), (a) => a.length === 1)
      const t0 = first.startedAt
      // The queue row (one per pending delivery) moved to the retry with its delivery.
      const queue = t.sql<{ dueIn: number; inStep: boolean }>`
        SELECT extract(epoch FROM q.next_attempt_at) * 1000 - ${t0} AS "dueIn",
          q.next_attempt_at = d.next_attempt_at AS "inStep"
        FROM webhook_queue q JOIN webhook_deliveries d ON d.seq = q.seq`
      expect((yield* queue).map((row) => ({ dueIn: Number(row.dueIn), inStep: row.inStep }))).toEqual([
        { dueIn: 10_000, inStep: true }
      ])

      for (const [step, total] of [[10, 2], [20, 3], [50, 4], [100, 5]] as const) {
        yield* TestClock.adjust(`${step - 1} seconds`)
        yield* stays(t.attempts(hook.id), (a) => a.length === total - 1)
        yield* TestClock.adjust("1 second")
        yield* eventually(`attempt ${total}`, t.attempts(hook.id), (a) => a.length === total)
      }
      const all = yield* t.attempts(hook.id)
      expect(all.map((a) => (a.startedAt - t0) / 1000)).toEqual([0, 10, 30, 80, 180])
      expect(all.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5])
      expect(all.at(-1)?.status).toBe("failed")
      expect(receiver.received).toHaveLength(5)
      expect(yield* queue).toEqual([])

      // maxRetries reached: nothing more, however long we wait.
      yield* TestClock.adjust("1 hour")
      yield* stays(t.attempts(hook.id), (a) => a.length === 5)
      expect(receiver.received).toHaveLength(5)
    }))

  // Moving a TestClock by days runs every periodic loop of the runtime once per period (slow),
  // so these tests move the failure streak's start back instead of the clock forward.

  it.effect("after 5 days of nothing but failures the webhook is disabled and its owners are e-mailed", () =>
    Effect.gen(function*() {
      const t = yield* build
      const receiver = yield* startReceiver(() => 502)
      const hook = yield* t.webhooks.create(t.scope, { url: receiver.url(), events: ["*"], maxRetries: 0 }).pipe(
        Effect.orDie
      )
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("the first failure", t.attempts(hook.id), (a) => a.length === 1)

      // Failing for four days and a bit: not yet.
      yield* t.backdateStreak(hook.id, "4 days 23 hours")
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("a failure on day 4", t.attempts(hook.id), (a) => a.length === 2)
      expect((yield* t.webhooks.get(t.scope, hook.id).pipe(Effect.orDie)).isActive).toBe(true)

      yield* t.backdateStreak(hook.id, "1 hour")
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      const disabled = yield* eventually(
        "the webhook disabled",
        t.webhooks.get(t.scope, hook.id).pipe(Effect.orDie),
        (webhook) => !webhook.isActive
      )
      expect(disabled.disabledReason).toMatch(/5 days/)
      const mails = yield* eventually(
        "the owners' e-mail",
        Effect.sync(() => Fs.readdirSync(t.outbox).filter((name) => name.endsWith(".eml"))),
        (names) => names.length === 1
      )
      const mail = Fs.readFileSync(Path.join(t.outbox, mails[0]), "utf8")
      expect(mail).toContain("owner@example.com")
      expect(mail).toContain(hook.id)
      // Disabled: no new deliveries are accepted for it.
      const refused = yield* Effect.flip(t.fanOut.ping(t.scope, hook.id))
      expect(refused).toBeInstanceOf(Conflict)
    }))

  it.effect("a success ends the failure streak", () =>
    Effect.gen(function*() {
      const t = yield* build
      let status = 500
      const receiver = yield* startReceiver(() => status)
      const hook = yield* t.webhooks.create(t.scope, { url: receiver.url(), events: ["*"], maxRetries: 0 }).pipe(
        Effect.orDie
      )
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("a failure", t.attempts(hook.id), (a) => a.length === 1)
      yield* t.backdateStreak(hook.id, "6 days")
      status = 200
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("a success", t.attempts(hook.id), (a) => a.length === 2)
      status = 500
      yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("a failure after the success", t.attempts(hook.id), (a) => a.length === 3)
      // The first failure was six days ago, but the streak started again: still active.
      expect((yield* t.webhooks.get(t.scope, hook.id).pipe(Effect.orDie)).isActive).toBe(true)
    }))

  it.effect("the retention prune keeps the log 7 / 30 / 90 days by plan and never a pending delivery", () =>
    Effect.gen(function*() {
      const t = yield* build
      const receiver = yield* startReceiver(() => 200)
      const hook = yield* t.webhooks.create(t.scope, { url: receiver.url(), events: ["*"] }).pipe(Effect.orDie)
      for (let i = 0; i < 2; i++) yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("two deliveries", t.attempts(hook.id), (a) => a.length === 2)
      // One delivery is 8 days old, one 31 days old; a third is still pending from 100 days ago.
      yield* t.sql`
        UPDATE webhook_deliveries SET created_at = created_at - interval '8 days'
        WHERE seq = (SELECT min(seq) FROM webhook_deliveries)`
      yield* t.sql`
        UPDATE webhook_deliveries SET created_at = created_at - interval '31 days'
        WHERE seq = (SELECT max(seq) FROM webhook_deliveries)`
      yield* t.sql`
        INSERT INTO webhook_deliveries (id, webhook_id, event, payload, next_attempt_at, created_at)
        VALUES ('delivery_old_pending', ${hook.id}, 'ping', '{}', now() + interval '1 hour', now() - interval '100 days')`
      const remaining = t.sql<{ id: string }>`SELECT id FROM webhook_deliveries ORDER BY seq`
      const now = Date.now()

      yield* t.sql`UPDATE organizations SET plan = 'pro' WHERE id = ${t.scope.orgId}`
      expect(yield* t.prune(now)).toBe(1)
      expect((yield* remaining).length).toBe(2)
      yield* t.sql`UPDATE organizations SET plan = 'free' WHERE id = ${t.scope.orgId}`
      expect(yield* t.prune(now)).toBe(1)
      expect((yield* remaining).map((row) => row.id)).toEqual(["delivery_old_pending"])
      // The log has no foreign keys (migration 0019): the pruned deliveries' attempts went with them.
      expect(yield* t.sql`SELECT delivery_seq FROM webhook_attempts`).toEqual([])
    }))

  it.effect("deleting a webhook, or its organization, removes its deliveries and their attempts", () =>
    Effect.gen(function*() {
      const t = yield* build
      const receiver = yield* startReceiver(() => 200)
      const create = t.webhooks.create(t.scope, { url: receiver.url(), events: ["*"] }).pipe(Effect.orDie)
      const [doomed, kept] = [yield* create, yield* create]
      for (const hook of [doomed, kept, doomed]) yield* t.fanOut.ping(t.scope, hook.id).pipe(Effect.orDie)
      yield* eventually("attempts", t.attempts(doomed.id), (a) => a.length === 2)
      yield* eventually("attempts", t.attempts(kept.id), (a) => a.length === 1)
      // A pending delivery too (the queue), due later.
      yield* t.sql`
        INSERT INTO webhook_deliveries (id, webhook_id, event, payload, next_attempt_at, created_at)
        VALUES ('delivery_pending', ${doomed.id}, 'ping', '{}', now() + interval '1 hour', now())`
      const logOf = (webhookId: string) =>
        t.sql<{ deliveries: number; attempts: number }>`
          SELECT count(*)::int AS deliveries,
            (SELECT count(*)::int FROM webhook_attempts a JOIN webhook_deliveries d ON d.seq = a.delivery_seq
              WHERE d.webhook_id = ${webhookId}) AS attempts
          FROM webhook_deliveries WHERE webhook_id = ${webhookId}`.pipe(Effect.map((rows) => rows[0]))
      const attemptRows = t.sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_attempts`.pipe(
        Effect.map((rows) => rows[0].n)
      )
      expect(yield* logOf(doomed.id)).toEqual({ deliveries: 3, attempts: 2 })
      expect(yield* attemptRows).toBe(3)

      yield* t.webhooks.remove(t.scope, doomed.id).pipe(Effect.orDie)
      expect(yield* logOf(doomed.id)).toEqual({ deliveries: 0, attempts: 0 })
      // No attempt is left behind without its delivery; the other webhook's log is untouched.
      expect(yield* attemptRows).toBe(1)
      expect(yield* logOf(kept.id)).toEqual({ deliveries: 1, attempts: 1 })

      yield* t.sql`DELETE FROM organizations WHERE id = ${t.scope.orgId}`
      expect(yield* logOf(kept.id)).toEqual({ deliveries: 0, attempts: 0 })
      expect(yield* attemptRows).toBe(0)
    }))
})
