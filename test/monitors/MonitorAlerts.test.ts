import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { MonitorAlerts } from "../../services/monitors/MonitorAlerts.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { startSmtpServer } from "../support/smtp.ts"
import { eventually } from "../support/wait.ts"

/** A real HTTP target whose answer the test switches between healthy (200) and failing (503). */
const startTarget = Effect.acquireRelease(
  Effect.callback<{ server: Http.Server; url: string; state: { healthy: boolean } }>((resume) => {
    const state = { healthy: false }
    const server = Http.createServer((_req, res) => {
      res.statusCode = state.healthy ? 200 : 503
      res.end(state.healthy ? "ok" : "maintenance")
    })
    server.listen(
      0,
      "127.0.0.1",
      () =>
        resume(
          Effect.succeed({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`, state })
        )
    )
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

describe("monitor alerts", () => {
  it.live("a monitor failing against a real target sends exactly one down and one recovery e-mail per recipient", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer
      const target = yield* startTarget
      const app = yield* startApp({ smtpUrl: Option.some(Redacted.make(smtp.url)), baseUrl: "https://status.test" })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "alerts-org" })
      // A member is not alerted; an admin is.
      for (const [username, role] of [["ann", "admin"], ["max", "member"]]) {
        yield* request(`${app.baseUrl}/api/v1/admin/orgs/alerts-org/users`, {
          token: "adm_test_token_0123456789",
          method: "POST",
          body: { username, email: `${username}@example.com`, role }
        })
      }

      const invalid = yield* request(`${app.baseUrl}/api/v1/monitors`, {
        token: key,
        method: "POST",
        body: { name: "Bad", url: target.url, alertEmails: ["not-an-address"] }
      })
      expect(invalid.status).toBe(400)

      const created = yield* request(`${app.baseUrl}/api/v1/monitors`, {
        token: key,
        method: "POST",
        body: { name: "Checkout API", url: target.url, retries: 0, alertEmails: ["oncall@example.org"] }
      })
      expect(created.status).toBe(201)
      expect(created.body.alertEmails).toEqual(["oncall@example.org"])
      const monitorId = created.body.id as string
      const recipients = ["alerts-org-owner@example.com", "ann@example.com", "oncall@example.org"]

      const downMails = yield* eventually(
        "the down e-mails",
        Effect.sync(() => smtp.received.filter((mail) => mail.subject.includes("DOWN"))),
        (mails) => mails.length >= recipients.length,
        { timeoutMs: 60_000 }
      )
      expect(downMails.flatMap((mail) => mail.to).sort()).toEqual(recipients)
      const [down] = downMails
      expect(down.subject).toBe("[Canopy] DOWN: Checkout API")
      expect(down.body).toContain(target.url)
      expect(down.body).toContain("Error: expected status 200, got 503")
      expect(down.body).toContain("https://status.test/status/alerts-org")
      expect(down.body).toMatch(/Down since: \d{4}-\d{2}-\d{2}T/)

      // Recovery: the target heals and a minute passes (`frequency`): the check is moved one
      // interval back in the database, the next one is due now, and a PATCH reloads the entity.
      target.state.healthy = true
      yield* app.sql`UPDATE heartbeats SET slot_at = slot_at - interval '60 seconds' WHERE monitor_id = ${monitorId}`
      yield* app.sql`UPDATE monitors SET next_check_at = now() WHERE id = ${monitorId}`
      const patched = yield* request(`${app.baseUrl}/api/v1/monitors/${monitorId}`, {
        token: key,
        method: "PATCH",
        body: { name: "Checkout API" }
      })
      expect(patched.status).toBe(200)
      const upMails = yield* eventually(
        "the recovery e-mails",
        Effect.sync(() => smtp.received.filter((mail) => mail.subject.includes("RECOVERED"))),
        (mails) => mails.length >= recipients.length,
        { timeoutMs: 60_000 }
      )
      expect(upMails.flatMap((mail) => mail.to).sort()).toEqual(recipients)
      expect(upMails[0].subject).toBe("[Canopy] RECOVERED: Checkout API")
      expect(upMails[0].body).toMatch(/Downtime: \d+ min/)

      // Exactly once: every alert is one sent outbox row, nothing pending, nothing else received.
      // (The outbox marks a mail sent just after the SMTP server accepted it.)
      const rows = yield* eventually(
        "every alert marked sent",
        app.sql<{ key: string; sent: boolean }>`
          SELECT idempotency_key AS key, sent_at IS NOT NULL AS sent FROM mail_outbox`.pipe(Effect.orDie),
        (rows) => rows.every((row) => row.sent)
      )
      expect(rows).toHaveLength(2 * recipients.length)
      expect(smtp.received).toHaveLength(2 * recipients.length)
    }).pipe(Effect.scoped))

  it.live("reminds at most once per hour while a monitor stays down", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { org } = yield* bootstrapOrg(app.baseUrl, { slug: "remind-org" })
      yield* app.sql`
        INSERT INTO monitors (id, org_id, name, url, status, next_check_at)
        VALUES ('mon_remind', ${org.id}, 'Remind me', 'http://127.0.0.1:9/', 'down', now() + interval '1 hour')`
      // Down for 2.5 hours: the second hourly reminder is due.
      yield* app.sql`
        INSERT INTO monitor_alerts (monitor_id, down_event_id, down_since, error)
        VALUES ('mon_remind', 42, now() - interval '150 minutes', 'connect ECONNREFUSED')`
      const alerts = Context.get(app.context, MonitorAlerts)
      // Two runners' sweeps in the same hour (the app's own runs every minute as well).
      yield* alerts.sweepReminders
      yield* alerts.sweepReminders
      const rows = yield* app.sql<{ key: string; subject: string; text: string }>`
        SELECT idempotency_key AS key, subject, text_body AS text FROM mail_outbox`
      expect(rows.map((row) => row.key)).toEqual(["monitor-reminder:42:2:remind-org-owner@example.com"])
      expect(rows[0].subject).toBe("[Canopy] Still down: Remind me")
      expect(rows[0].text).toContain("connect ECONNREFUSED")
      expect(rows[0].text).toContain("Downtime: 2 h 30 min")

      // Once it is back up (or paused), no more reminders.
      yield* app.sql`UPDATE monitors SET status = 'up' WHERE id = 'mon_remind'`
      yield* app.sql`UPDATE monitor_alerts SET down_since = down_since - interval '1 hour'`
      yield* alerts.sweepReminders
      expect(yield* app.sql`SELECT 1 FROM mail_outbox`).toHaveLength(1)
    }).pipe(Effect.scoped))
})
