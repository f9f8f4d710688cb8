import { describe, expect, it } from "@effect/vitest"
import { solveChallenge } from "altcha-lib"
import { deriveKey } from "altcha-lib/algorithms/pbkdf2"
import { Context, Effect, Option, Redacted } from "effect"
import * as Net from "node:net"
import { SMTPServer } from "smtp-server"
import { LogSink } from "../../services/platform/Logging.ts"
import { SigningSecret } from "../../services/subscriptions/SigningSecret.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "../webhooks/receiver.ts"
import { startOtlpReceiver, tracingTo } from "./otlpReceiver.ts"

const traceId = "0af7651916cd43dd8448eb211c80319c"

/** Every line the app logs, through the `LogSink` seam. */
const captured = () => {
  const lines: Array<string> = []
  return { lines, services: Context.make(LogSink, (line: string) => lines.push(line)) }
}

/** An SMTP server that accepts any login (so the URL's password is used) and keeps raw mails. */
const startAuthSmtp = Effect.acquireRelease(
  Effect.callback<{ server: SMTPServer; port: number; mails: Array<string> }>((resume) => {
    const mails: Array<string> = []
    const server = new SMTPServer({
      secure: false,
      authOptional: true,
      allowInsecureAuth: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onAuth: (auth, _session, callback) => callback(null, { user: auth.username }),
      onData(stream, _session, callback) {
        const chunks: Array<Buffer> = []
        stream.on("data", (chunk: Buffer) => chunks.push(chunk))
        stream.on("end", () => {
          mails.push(Buffer.concat(chunks).toString("utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "="))
          callback()
        })
      }
    })
    server.listen(
      0,
      "127.0.0.1",
      () => resume(Effect.succeed({ server, port: (server.server.address() as Net.AddressInfo).port, mails }))
    )
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

describe("structured logs", () => {
  it.live("LOG_FORMAT=json: one JSON object per line, with level, message, request, trace and organization ids", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const { lines, services } = captured()
      const app = yield* startApp({ logFormat: "json", logLevel: "debug", tracing: tracingTo(otlp.url) }, services)
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "logged" })
      const listed = yield* request(`${app.baseUrl}/api/v1/monitors`, {
        token: key,
        headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` }
      })
      expect(listed.status).toBe(200)
      const requestId = listed.headers.get("x-request-id")
      const me = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })

      const line = yield* eventually(
        "the request's log line",
        Effect.sync(() => lines.map((text) => JSON.parse(text)).find((entry) => entry.requestId === requestId)),
        (entry) => entry !== undefined
      )
      expect(line).toMatchObject({
        level: "debug",
        message: "request",
        method: "GET",
        path: "/api/v1/monitors",
        status: 200,
        traceId,
        orgId: me.body.org.id
      })
      expect(line.spanId).toMatch(/^[0-9a-f]{16}$/)
      expect(new Date(line.timestamp).toISOString()).toBe(line.timestamp)
      for (const text of lines) {
        const entry = JSON.parse(text)
        expect(typeof entry.level).toBe("string")
        expect(typeof entry.timestamp).toBe("string")
        expect(entry).toHaveProperty("message")
      }
    }))

  it.live("the default format stays Effect's readable one: nothing goes through the JSON sink", () =>
    Effect.gen(function*() {
      const { lines, services } = captured()
      const app = yield* startApp({ logLevel: "debug" }, services)
      expect((yield* request(`${app.baseUrl}/healthz`)).status).toBe(200)
      yield* app.stop
      expect(lines).toEqual([])
    }))

  it.live("no secret reaches the log of a run that used every secret-bearing feature", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const smtp = yield* startAuthSmtp
      const receiver = yield* startReceiver()
      const { lines, services } = captured()
      const secrets: Record<string, string> = {
        masterKey: "c2VjcmV0LW1hc3Rlci1rZXktZm9yLWxvZy10ZXN0cyE=",
        smtpPassword: "smtp-pass-9f8e7d6c5b",
        adminToken,
        webhookSecret: "whsec-log-test-4a3b2c1d",
        ciSecret: "ci-secret-value-5e6f7a8b",
        aiKey: "sk-ai-log-test-1c2d3e4f"
      }
      const app = yield* startApp({
        logFormat: "json",
        logLevel: "trace",
        tracing: tracingTo(otlp.url),
        masterKey: Option.some(Redacted.make(secrets.masterKey)),
        smtpUrl: Option.some(Redacted.make(`smtp://canopy:${secrets.smtpPassword}@127.0.0.1:${smtp.port}`))
      }, services)
      const { key, keyId } = yield* bootstrapOrg(app.baseUrl, { slug: "secretive", plan: "enterprise" })
      secrets.apiKey = key
      const api = (path: string, init?: { method?: string; body?: unknown }) =>
        request(`${app.baseUrl}${path}`, { ...init, token: key })

      // An API key in use, in a header and in a Sentry-style query string; a second key made and revoked.
      expect((yield* api("/api/v1/me")).status).toBe(200)
      yield* request(`${app.baseUrl}/api/1/envelope/?sentry_key=${key}`, { method: "POST", body: "{}" })
      const second = yield* request(`${app.baseUrl}/api/v1/admin/orgs/secretive/keys`, {
        method: "POST",
        token: adminToken,
        body: { username: "secretive-owner" }
      })
      expect(second.status).toBe(201)
      secrets.secondKey = second.body.key
      expect(
        (yield* request(`${app.baseUrl}/api/v1/admin/keys/${second.body.id}`, {
          method: "DELETE",
          token: adminToken
        })).status
      ).toBe(204)
      expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: secrets.secondKey })).status).toBe(401)
      expect(keyId).toBeTypeOf("string")

      // A webhook with a secret, pinged: the delivery is signed with it.
      const hook = yield* api("/api/v1/webhooks", {
        method: "POST",
        body: { url: receiver.url(), events: ["*"], secret: secrets.webhookSecret }
      })
      expect(hook.status).toBe(201)
      expect((yield* api(`/api/v1/webhooks/${hook.body.id}/test`, { method: "POST" })).status).toBe(202)
      yield* eventually("the signed ping", Effect.sync(() => receiver.on("/hook")), (received) => received.length > 0)
      expect(receiver.on("/hook")[0].headers["x-service-signature"]).toMatch(/^sha256=/)

      // A repository with a secret CI variable and an AI provider key.
      expect((yield* api("/api/v1/code/repos", { method: "POST", body: { name: "vault" } })).status).toBe(201)
      const variable = yield* api("/api/v1/code/repos/secretive/vault/ci/variables/DEPLOY_TOKEN", {
        method: "PUT",
        body: { value: secrets.ciSecret, secret: true }
      })
      expect(variable.status).toBe(201)
      const ai = yield* api("/api/v1/code/repos/secretive/vault/ai/settings", {
        method: "PATCH",
        body: { apiKey: secrets.aiKey }
      })
      expect(ai.status).toBe(200)

      // A subscriber: the confirmation mail (sent with the SMTP password) carries a token, used.
      const challenge = yield* request(`${app.baseUrl}/api/v1/subscribe/challenge`)
      const solution = yield* Effect.promise(() => solveChallenge({ challenge: challenge.body, deriveKey }))
      const challengeToken = Buffer.from(JSON.stringify({ challenge: challenge.body, solution })).toString("base64")
      const subscribed = yield* request(`${app.baseUrl}/api/v1/subscribe`, {
        method: "POST",
        body: { orgSlug: "secretive", email: "ann@example.com", challengeToken }
      })
      expect(subscribed.status).toBe(200)
      const [mail] = yield* eventually(
        "the confirmation mail",
        Effect.sync(() => smtp.mails),
        (mails) => mails.length > 0
      )
      const link = /\/api\/v1\/subscribe\/confirm\?token=([^\s"<>&]+)/.exec(mail)
      expect(link).not.toBeNull()
      secrets.subscriberToken = decodeURIComponent(link![1])
      expect((yield* request(`${app.baseUrl}/api/v1/subscribe/confirm?token=${link![1]}`)).status).toBe(200)

      // The signing secret behind those tokens.
      secrets.signingSecret = yield* Effect.flatMap(
        Effect.succeed(Context.get(app.context as Context.Context<SigningSecret>, SigningSecret)),
        (signing) => signing.secret
      )

      yield* app.stop
      const log = lines.join("\n")
      expect(lines.length).toBeGreaterThan(10)
      for (const [name, value] of Object.entries(secrets)) {
        expect(value.length, name).toBeGreaterThan(8)
        expect(log.includes(value), `${name} appears in the log`).toBe(false)
      }
    }))
})
