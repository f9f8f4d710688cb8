import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Mailer } from "../../services/mail/Mailer.ts"
import { MailOutbox } from "../../services/mail/MailOutbox.ts"
import { Database } from "../../services/platform/Database.ts"
import { createTestDatabase } from "../support/database.ts"
import { startSmtpServer } from "../support/smtp.ts"
import { eventually } from "../support/wait.ts"

/**
 * The outbox on its own, against a real SMTP server that refuses for a while: retries with
 * backoff, a key enqueued twice is one mail, and a mail that keeps failing is given up.
 * (Its delivery across a restart is tested with subscriptions.)
 */
describe("mail outbox", () => {
  it.live("retries with backoff, enqueues a key once and gives up after maxAttempts", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer
      smtp.state.reject = true
      // Only this outbox on a fresh database (no app whose own outbox would compete).
      const context = yield* Layer.build(
        MailOutbox.layerWith({ pollInterval: "50 millis", retryBase: "100 millis", maxAttempts: 3 }).pipe(
          Layer.provide(Mailer.layerSmtp({ url: smtp.url, from: "Canopy <canopy@test>" })),
          Layer.provideMerge(Database.layer(Redacted.make(yield* createTestDatabase), { maxConnections: 4 }))
        )
      )
      const outbox = Context.get(context, MailOutbox)
      const sql = Context.get(context, SqlClient.SqlClient)
      const enqueue = (key: string, subject: string) =>
        outbox.enqueue([{ idempotencyKey: key, to: "ops@example.com", subject, text: "body" }]).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )

      expect(yield* enqueue("test:doomed", "Doomed")).toBe(1)
      expect(yield* enqueue("test:doomed", "Doomed again")).toBe(0)
      const given = yield* eventually(
        "the mail given up",
        sql<{ attempts: number; failed: boolean; error: string | null }>`
          SELECT attempts, failed_at IS NOT NULL AS failed, last_error AS error FROM mail_outbox
          WHERE idempotency_key = 'test:doomed'`,
        (rows) => rows[0]?.failed === true,
        { timeoutMs: 30_000 }
      )
      expect(given).toEqual([{ attempts: 3, failed: true, error: expect.stringContaining("Try again later") }])

      // The server recovers: a new mail goes out after its retries, the given-up one never does.
      yield* enqueue("test:later", "Later")
      yield* eventually(
        "a failed first attempt",
        sql<{ attempts: number }>`SELECT attempts FROM mail_outbox WHERE idempotency_key = 'test:later'`,
        (rows) => rows[0]?.attempts >= 1
      )
      smtp.state.reject = false
      yield* eventually(
        "the later mail",
        Effect.sync(() => smtp.received.map((mail) => mail.subject)),
        (subjects) => subjects.includes("Later")
      )
      yield* outbox.flush
      expect(smtp.received.map((mail) => mail.subject)).toEqual(["Later"])
    }).pipe(Effect.scoped))
})
