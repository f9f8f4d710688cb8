import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Fs from "node:fs"
import type * as Net from "node:net"
import * as Path from "node:path"
import { SMTPServer } from "smtp-server"
import { Mailer, MailError, type MailMessage } from "../../services/mail/Mailer.ts"
import { tempDir } from "../support/tempDir.ts"

const USER = "canopy-mailer"
const PASS = "s3cr:et/p@ss word"
const FROM = "Canopy <noreply@canopy.test>"

interface Received {
  readonly raw: string
  readonly mailFrom: string | undefined
  readonly rcptTo: ReadonlyArray<string>
  readonly user: unknown
}

/** A real SMTP server on 127.0.0.1, AUTH required, plain text (no STARTTLS), recording every accepted message. */
const smtpServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: SMTPServer; port: number; received: Array<Received>; openSessions: () => number }>(
      (resolve, reject) => {
        const received: Array<Received> = []
        let open = 0
        const server = new SMTPServer({
          secure: false,
          authOptional: false,
          allowInsecureAuth: true,
          disabledCommands: ["STARTTLS"],
          logger: false,
          closeTimeout: 1000,
          onConnect(_session, callback) {
            open++
            callback()
          },
          onClose(_session, callback) {
            open--
            callback()
          },
          onAuth(auth, _session, callback) {
            if (auth.username === USER && auth.password === PASS) {
              callback(null, { user: auth.username })
            } else {
              callback(new Error("Invalid username or password"))
            }
          },
          onData(stream, session, callback) {
            const chunks: Array<Buffer> = []
            stream.on("data", (chunk: Buffer) => chunks.push(chunk))
            stream.on("error", callback)
            stream.on("end", () => {
              received.push({
                raw: Buffer.concat(chunks).toString("utf8"),
                mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
                rcptTo: session.envelope.rcptTo.map((rcpt) => rcpt.address),
                user: session.user
              })
              callback()
            })
          }
        })
        server.on("error", reject)
        server.listen(0, "127.0.0.1", () => {
          const port = (server.server.address() as Net.AddressInfo).port
          resolve({ server, port, received, openSessions: () => open })
        })
      }
    )
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

const smtpUrl = (port: number, pass = PASS) =>
  `smtp://${encodeURIComponent(USER)}:${encodeURIComponent(pass)}@127.0.0.1:${port}`

const sendWith = (layer: Layer.Layer<Mailer, MailError>, message: MailMessage) =>
  Effect.gen(function*() {
    const mailer = yield* Mailer
    return yield* mailer.send(message)
  }).pipe(Effect.provide(layer))

/** Unfolded value of a top-level header of a raw RFC 5322 message. */
const header = (raw: string, name: string): string | undefined => {
  const head = raw.slice(0, raw.indexOf("\r\n\r\n")).replace(/\r\n[ \t]+/g, " ")
  const line = head.split("\r\n").find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
  return line?.slice(name.length + 1).trim()
}

const message: MailMessage = {
  to: ["alice@example.com", "bob@example.org"],
  subject: "Monitor api.example.com is down",
  text: "The monitor api.example.com failed its last 3 checks.",
  html: "<p>The monitor <b>api.example.com</b> failed its last 3 checks.</p>",
  headers: { "X-Canopy-Event": "monitor.down" }
}

describe("Mailer.layerSmtp", () => {
  it.live("delivers through an authenticated SMTP server and closes its connections with the layer", () =>
    Effect.gen(function*() {
      const smtp = yield* smtpServer
      const { messageId } = yield* sendWith(
        Mailer.layerSmtp({ url: Redacted.make(smtpUrl(smtp.port)), from: FROM }),
        message
      )

      expect(smtp.received).toHaveLength(1)
      const [mail] = smtp.received
      expect(mail.user).toBe(USER)
      expect(mail.mailFrom).toBe("noreply@canopy.test")
      expect(mail.rcptTo).toEqual(["alice@example.com", "bob@example.org"])

      expect(messageId).toMatch(/^<.+@canopy\.test>$/)
      expect(header(mail.raw, "Message-ID")).toBe(messageId)
      expect(header(mail.raw, "From")).toBe(FROM)
      expect(header(mail.raw, "To")).toBe("alice@example.com, bob@example.org")
      expect(header(mail.raw, "Subject")).toBe(message.subject)
      expect(header(mail.raw, "X-Canopy-Event")).toBe("monitor.down")
      expect(header(mail.raw, "Content-Type")).toMatch(/^multipart\/alternative;/)
      expect(mail.raw).toContain(message.text)
      expect(mail.raw).toContain("<b>api.example.com</b>")
      expect(mail.raw).not.toContain(PASS)

      // the pooled connection was closed when the layer's scope closed
      yield* Effect.promise(async () => {
        for (let i = 0; i < 100 && smtp.openSessions() > 0; i++) await new Promise((r) => setTimeout(r, 20))
      })
      expect(smtp.openSessions()).toBe(0)
    }))

  it.live("uses the message's own from and a single recipient", () =>
    Effect.gen(function*() {
      const smtp = yield* smtpServer
      yield* Effect.gen(function*() {
        const mailer = yield* Mailer
        yield* mailer.send({ to: "carol@example.net", subject: "One", text: "first", from: "alerts@canopy.test" })
        yield* mailer.send({ to: "dave@example.net", subject: "Two", text: "second" })
      }).pipe(Effect.provide(Mailer.layerSmtp({ url: smtpUrl(smtp.port), from: FROM })))

      expect(smtp.received.map((m) => [m.mailFrom, m.rcptTo, header(m.raw, "Subject")])).toEqual([
        ["alerts@canopy.test", ["carol@example.net"], "One"],
        ["noreply@canopy.test", ["dave@example.net"], "Two"]
      ])
      expect(header(smtp.received[0].raw, "From")).toBe("alerts@canopy.test")
      expect(header(smtp.received[0].raw, "Content-Type")).toMatch(/^text\/plain/)
    }))

  it.live("fails with MailError on a wrong password, without leaking it", () =>
    Effect.gen(function*() {
      const smtp = yield* smtpServer
      const wrong = "wrong-Pa55word!"
      const error = yield* Effect.flip(
        sendWith(Mailer.layerSmtp({ url: smtpUrl(smtp.port, wrong), from: FROM }), message)
      )
      expect(error).toBeInstanceOf(MailError)
      expect(error._tag).toBe("MailError")
      expect(error.code).toBe("EAUTH")
      expect(error.responseCode).toBe(535)
      expect(error.message).not.toContain(wrong)
      expect(JSON.stringify(error)).not.toContain(wrong)
      expect(smtp.received).toHaveLength(0)
    }))

  it.live("fails with MailError when nothing listens", () =>
    Effect.gen(function*() {
      const smtp = yield* smtpServer
      const port = smtp.port
      yield* Effect.promise(() => new Promise<void>((resolve) => smtp.server.close(() => resolve())))
      const error = yield* Effect.flip(sendWith(Mailer.layerSmtp({ url: smtpUrl(port), from: FROM }), message))
      expect(error).toBeInstanceOf(MailError)
      expect(error.code).toBe("ESOCKET")
      expect(error.message).toContain("ECONNREFUSED")
      expect(error.message).not.toContain(PASS)
    }))

  it.effect("rejects a URL that is not smtp:// or smtps://", () =>
    Effect.gen(function*() {
      for (const url of ["http://user:hunter2secret@example.com", "not a url hunter2secret"]) {
        const error = yield* Effect.flip(Layer.build(Mailer.layerSmtp({ url, from: FROM })))
        expect(error).toBeInstanceOf(MailError)
        expect(error.message).not.toContain("hunter2secret")
      }
    }))
})

describe("Mailer.layerOutbox", () => {
  it.live("writes each message as a sortable .eml file", () =>
    Effect.gen(function*() {
      const root = yield* tempDir("canopy-outbox-")
      const dir = Path.join(root, "outbox")
      const ids = yield* Effect.gen(function*() {
        const mailer = yield* Mailer
        const first = yield* mailer.send(message)
        const second = yield* mailer.send({ to: "carol@example.net", subject: "Second", text: "two" })
        const third = yield* mailer.send({ to: "dave@example.net", subject: "Third", text: "three" })
        return [first.messageId, second.messageId, third.messageId]
      }).pipe(Effect.provide(Mailer.layerOutbox({ dir, from: FROM })))

      const files = Fs.readdirSync(dir)
      expect(files).toHaveLength(3)
      for (const file of files) expect(file).toMatch(/^\d{8}T\d{9}Z-\d{6}-[0-9a-f]{8}\.eml$/)
      expect(Fs.statSync(Path.join(dir, files[0])).mode & 0o777).toBe(0o600)

      const raws = [...files].sort().map((file) => Fs.readFileSync(Path.join(dir, file), "utf8"))
      expect(raws.map((raw) => header(raw, "Subject"))).toEqual([message.subject, "Second", "Third"])
      expect(raws.map((raw) => header(raw, "Message-ID"))).toEqual(ids)

      const [raw] = raws
      expect(header(raw, "From")).toBe(FROM)
      expect(header(raw, "To")).toBe("alice@example.com, bob@example.org")
      expect(header(raw, "X-Canopy-Event")).toBe("monitor.down")
      expect(header(raw, "Date")).toBeDefined()
      expect(header(raw, "MIME-Version")).toBe("1.0")
      expect(raw).toContain(message.text)
      // RFC 5322 line endings, as SMTP would send them
      expect(raw).toContain("\r\n")
      expect(raw.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/)
    }))
})
