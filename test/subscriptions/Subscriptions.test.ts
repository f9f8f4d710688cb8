import { describe, expect, it } from "@effect/vitest"
import { solveChallenge } from "altcha-lib"
import { deriveKey } from "altcha-lib/algorithms/pbkdf2"
import { Effect, Option, Redacted } from "effect"
import { createIncident, patchIncident } from "../live/incidents.ts"
import { bootstrapOrg, request, startApp, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import type { ReceivedMail } from "../support/smtp.ts"
import { startSmtpServer } from "../support/smtp.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventually } from "../support/wait.ts"

/** Fetches a challenge and solves it as the ALTCHA widget would; returns the `challengeToken`. */
const solvedToken = (baseUrl: string) =>
  Effect.gen(function*() {
    const challenge = yield* request(`${baseUrl}/api/v1/subscribe/challenge`)
    expect(challenge.status).toBe(200)
    const solution = yield* Effect.promise(() => solveChallenge({ challenge: challenge.body, deriveKey }))
    expect(solution).not.toBeNull()
    return Buffer.from(JSON.stringify({ challenge: challenge.body, solution })).toString("base64")
  })

const subscribe = (baseUrl: string, body: Record<string, unknown>) =>
  request(`${baseUrl}/api/v1/subscribe`, { method: "POST", body })

/** The link in a mail, re-pointed at the app under test (mails use BASE_URL). */
const linkIn = (mail: ReceivedMail, path: string, baseUrl: string) => {
  const match = mail.body.match(new RegExp(`https?://[^\\s"<>]*${path.replace(/\//g, "\\/")}\\?token=[^\\s"<>]+`))
  if (match === null) throw new Error(`no ${path} link in ${mail.subject}`)
  const url = new URL(match[0].replace(/&amp;/g, "&"))
  return `${baseUrl}${url.pathname}${url.search}`
}

const mailsTo = (received: ReadonlyArray<ReceivedMail>, address: string, subject: string) =>
  received.filter((mail) => mail.to.includes(address) && mail.subject.includes(subject))

/** Subscribes and confirms `email` through the public API and the confirmation e-mail. */
const subscribeConfirmed = (
  app: { baseUrl: string },
  smtp: { received: Array<ReceivedMail> },
  slug: string,
  email: string,
  components?: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    const answer = yield* subscribe(app.baseUrl, {
      orgSlug: slug,
      email,
      challengeToken: yield* solvedToken(app.baseUrl),
      ...(components === undefined ? {} : { components })
    })
    expect(answer.status).toBe(200)
    const [confirmation] = yield* eventually(
      `confirmation for ${email}`,
      Effect.sync(() => mailsTo(smtp.received, email, "Confirm your subscription")),
      (mails) => mails.length >= 1
    )
    const confirmed = yield* request(linkIn(confirmation, "/api/v1/subscribe/confirm", app.baseUrl))
    expect(confirmed.status).toBe(200)
    expect(confirmed.body).toContain("Subscription confirmed")
  })

describe("e-mail subscriptions", () => {
  it.live("challenge, double opt-in, notification, unsubscribe", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer
      const app = yield* startApp({ smtpUrl: Option.some(Redacted.make(smtp.url)) })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "subs-org" })

      // Refusals: bad address, unknown page, forged and reused tokens.
      const badEmail = yield* subscribe(app.baseUrl, { orgSlug: "subs-org", email: "nope", challengeToken: "x" })
      expect(badEmail.status).toBe(400)
      expect(badEmail.body).toMatchObject({ success: false, error: "validation_error" })
      const forged = yield* subscribe(app.baseUrl, {
        orgSlug: "subs-org",
        email: "ann@example.com",
        challengeToken: Buffer.from("{\"challenge\":{}}").toString("base64")
      })
      expect(forged.body).toMatchObject({ success: false, error: "invalid_challenge" })
      const unknownPage = yield* subscribe(app.baseUrl, {
        orgSlug: "no-such-org",
        email: "ann@example.com",
        challengeToken: yield* solvedToken(app.baseUrl)
      })
      expect(unknownPage.body).toMatchObject({ success: false, error: "not_found" })

      const token = yield* solvedToken(app.baseUrl)
      const first = yield* subscribe(app.baseUrl, {
        orgSlug: "subs-org",
        email: "Ann@Example.com",
        challengeToken: token
      })
      expect(first.status).toBe(200)
      expect(first.body.success).toBe(true)
      const reused = yield* subscribe(app.baseUrl, {
        orgSlug: "subs-org",
        email: "bo@example.com",
        challengeToken: token
      })
      expect(reused.status).toBe(400)
      expect(reused.body).toMatchObject({ success: false, error: "challenge_used" })

      const [confirmation] = yield* eventually(
        "the confirmation e-mail",
        Effect.sync(() => mailsTo(smtp.received, "ann@example.com", "Confirm your subscription")),
        (mails) => mails.length === 1
      )
      // An incident before the confirmation never reaches the subscriber.
      yield* createIncident(app.baseUrl, key, { title: "Early incident", message: "Before confirmation" })

      const confirmLink = linkIn(confirmation, "/api/v1/subscribe/confirm", app.baseUrl)
      const confirmed = yield* request(confirmLink)
      expect(confirmed.status).toBe(200)
      expect(confirmed.headers.get("content-type")).toContain("text/html")
      expect(confirmed.body).toContain("Subscription confirmed")
      // The link works once.
      expect((yield* request(confirmLink)).status).toBe(404)

      // Subscribing a confirmed address again answers exactly as for a new one, and sends nothing.
      const again = yield* subscribe(app.baseUrl, {
        orgSlug: "subs-org",
        email: "ann@example.com",
        challengeToken: yield* solvedToken(app.baseUrl)
      })
      expect(again.status).toBe(200)
      expect(again.body).toEqual(first.body)

      yield* subscribeConfirmed(app, smtp, "subs-org", "bob@example.com")

      const incident = yield* createIncident(app.baseUrl, key, {
        title: "Payments are failing",
        severity: "major",
        message: "We are investigating failed card payments."
      })
      const [notification] = yield* eventually(
        "the incident notification",
        Effect.sync(() => mailsTo(smtp.received, "ann@example.com", "Payments are failing")),
        (mails) => mails.length >= 1
      )
      expect(notification.subject).toBe("[SUBS-ORG] Investigating: Payments are failing")
      expect(notification.body).toContain("We are investigating failed card payments.")
      expect(notification.headers["list-unsubscribe"]).toMatch(
        /^<https?:\/\/.+\/api\/v1\/subscribe\/unsubscribe\?token=/
      )
      expect(notification.headers["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click")
      expect(notification.body).not.toContain("Before confirmation")

      const unsubscribed = yield* request(linkIn(notification, "/api/v1/subscribe/unsubscribe", app.baseUrl))
      expect(unsubscribed.status).toBe(200)
      expect(unsubscribed.body).toContain("You are unsubscribed")

      // The resolution reaches Bob (still subscribed) and not Ann.
      yield* patchIncident(app.baseUrl, key, incident.id, { status: "resolved", message: "Payments work again." })
      yield* eventually(
        "Bob's resolution e-mail",
        Effect.sync(() => mailsTo(smtp.received, "bob@example.com", "Resolved: Payments are failing")),
        (mails) => mails.length === 1
      )
      expect(mailsTo(smtp.received, "ann@example.com", "Resolved")).toHaveLength(0)
      const queuedForAnn = yield* app.sql`SELECT 1 FROM mail_outbox WHERE recipient = 'ann@example.com'`
      // Her confirmation and the one incident while she was subscribed.
      expect(queuedForAnn).toHaveLength(2)
    }).pipe(Effect.scoped), 120_000)

  it.live(
    "a restart between the incident and the send still delivers exactly one e-mail",
    () =>
      Effect.gen(function*() {
        const smtp = yield* startSmtpServer
        const databaseUrl = yield* createTestDatabase
        // Runners of one deployment share the master key (here: the data folder holding it).
        const config = {
          smtpUrl: Option.some(Redacted.make(smtp.url)),
          dataDir: yield* tempDir("canopy-subs-")
        }
        const a = yield* startAppOnDatabase(databaseUrl, config)
        const { key } = yield* bootstrapOrg(a.baseUrl, { slug: "restart-subs" })
        yield* subscribeConfirmed(a, smtp, "restart-subs", "carol@example.com")

        // The SMTP server is in trouble when the incident happens: the first attempt fails.
        smtp.state.reject = true
        yield* createIncident(a.baseUrl, key, { title: "Payments are failing", message: "Queued across a restart" })
        yield* eventually(
          "a failed attempt",
          a.sql<{ attempts: number }>`
          SELECT attempts FROM mail_outbox WHERE idempotency_key LIKE 'incident:%' AND last_error IS NOT NULL`,
          (rows) => rows.length === 1
        )
        yield* a.stop
        smtp.state.reject = false

        const b = yield* startAppOnDatabase(databaseUrl, config)
        yield* eventually(
          "the notification after the restart",
          Effect.sync(() => mailsTo(smtp.received, "carol@example.com", "Payments are failing")),
          (mails) => mails.length >= 1
        )
        // The outbox marks the mail sent just after the SMTP server accepted it.
        const rows = yield* eventually(
          "the mail marked sent",
          b.sql<{ sent: boolean }>`
          SELECT sent_at IS NOT NULL AS sent FROM mail_outbox WHERE idempotency_key LIKE 'incident:%'`,
          (rows) => rows.every((row) => row.sent)
        )
        expect(rows).toEqual([{ sent: true }])
        expect(mailsTo(smtp.received, "carol@example.com", "Payments are failing")).toHaveLength(1)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a component filter limits notifications to incidents touching those components",
    () =>
      Effect.gen(function*() {
        const smtp = yield* startSmtpServer
        const app = yield* startApp({ smtpUrl: Option.some(Redacted.make(smtp.url)) })
        const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "filter-org" })
        for (const [component, monitor] of [["cmp_web", "mon_web"], ["cmp_db", "mon_db"]]) {
          yield* app.sql`
          INSERT INTO monitors (id, org_id, name, url, next_check_at)
          VALUES (${monitor}, ${org.id}, ${monitor}, 'http://127.0.0.1:9/', now() + interval '1 hour')`
          yield* app.sql`
          INSERT INTO components (id, org_id, name, position, created_at, updated_at)
          VALUES (${component}, ${org.id}, ${component}, 0, now(), now())`
          yield* app
            .sql`INSERT INTO component_monitors (component_id, monitor_id, position) VALUES (${component}, ${monitor}, 0)`
        }
        const unknown = yield* subscribe(app.baseUrl, {
          orgSlug: "filter-org",
          email: "dan@example.com",
          challengeToken: yield* solvedToken(app.baseUrl),
          components: ["cmp_nope"]
        })
        expect(unknown.body).toMatchObject({ success: false, error: "validation_error" })
        yield* subscribeConfirmed(app, smtp, "filter-org", "dan@example.com", ["cmp_db"])

        yield* createIncident(app.baseUrl, key, { title: "Web is down", affectedMonitors: ["mon_web"] })
        yield* createIncident(app.baseUrl, key, { title: "Database is slow", affectedMonitors: ["mon_db", "mon_web"] })
        yield* createIncident(app.baseUrl, key, { title: "Everything is slow" })
        const mails = yield* eventually(
          "Dan's notifications",
          Effect.sync(() =>
            smtp.received.filter((mail) =>
              mail.to.includes("dan@example.com") && mail.subject.includes("Investigating")
            )
          ),
          (received) => received.length >= 2
        )
        expect(mails.map((mail) => mail.subject).sort()).toEqual([
          "[FILTER-ORG] Investigating: Database is slow",
          "[FILTER-ORG] Investigating: Everything is slow"
        ])
        // The consumer handled the events in order, so the first one is decided: nothing for it.
        const queued = yield* app.sql<
          { subject: string }
        >`SELECT subject FROM mail_outbox WHERE recipient = 'dan@example.com'`
        expect(queued.map((row) => row.subject)).not.toContain("[FILTER-ORG] Investigating: Web is down")
        expect(queued).toHaveLength(3)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live("subscribe is limited to 10 requests per minute per client IP", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      yield* bootstrapOrg(app.baseUrl, { slug: "limit-subs" })
      // Fixed one-minute windows: send until refused, then count the window's accepted calls.
      const answers: Array<{ status: number; reset: string | null }> = []
      while (answers.length < 25 && answers.at(-1)?.status !== 429) {
        const answer = yield* subscribe(app.baseUrl, { orgSlug: "limit-subs", email: "x", challengeToken: "x" })
        answers.push({ status: answer.status, reset: answer.headers.get("x-ratelimit-reset") })
      }
      const refused = answers.at(-1)!
      expect(refused.status).toBe(429)
      const window = answers.filter((answer) => answer.reset === refused.reset && answer.status === 400)
      expect(window).toHaveLength(10)
    }).pipe(Effect.scoped))
})
