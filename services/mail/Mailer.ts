import { Clock, Context, Effect, Layer, Redacted, Schema } from "effect"
import * as NodeCrypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import nodemailer from "nodemailer"
import type { SendMailOptions } from "nodemailer"

/**
 * An outgoing e-mail. `from` falls back to the `from` the layer was built with.
 */
export interface MailMessage {
  readonly to: string | ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly html?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly from?: string | undefined
}

/**
 * Sending failed. Only the message, the nodemailer error code (`EAUTH`,
 * `ECONNECTION`, ...) and the SMTP reply code are kept: the original error is
 * dropped on purpose because it can carry the connection options, and the
 * message is scrubbed of the SMTP credentials.
 */
export class MailError extends Schema.TaggedError<MailError>()("MailError", {
  message: Schema.String,
  code: Schema.optional(Schema.String),
  responseCode: Schema.optional(Schema.Number)
}) {}

export class Mailer extends Context.Service<Mailer, {
  send(message: MailMessage): Effect.Effect<{ messageId: string }, MailError>
}>()("canopy/mail/Mailer") {
  /**
   * Sends over SMTP with a pooled nodemailer transport. `url` is
   * `smtp://user:pass@host:port` (plain, upgraded with STARTTLS when the server
   * offers it) or `smtps://user:pass@host:port` (implicit TLS); user and password
   * are percent-decoded, query parameters become nodemailer options. The pool's
   * connections are closed when the layer's scope closes. The URL is never
   * logged.
   */
  static layerSmtp(options: {
    readonly url: string | Redacted.Redacted<string>
    readonly from: string
  }): Layer.Layer<Mailer, MailError> {
    return Layer.effect(
      Mailer,
      Effect.gen(function*() {
        const url = Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url
        const secrets = yield* Effect.try({
          try: () => smtpUrlSecrets(url),
          catch: () =>
            new MailError({ message: "Invalid SMTP URL: expected smtp://user:pass@host:port or smtps://..." })
        })
        const transport = yield* Effect.acquireRelease(
          Effect.try({
            try: () =>
              nodemailer.createTransport({
                url,
                pool: true,
                logger: false,
                disableFileAccess: true,
                disableUrlAccess: true
              }),
            catch: (error) => toMailError(error, secrets)
          }),
          (transport) => Effect.sync(() => transport.close())
        )

        const send = Effect.fn("Mailer.send")(function*(message: MailMessage) {
          const info = yield* Effect.tryPromise({
            try: (signal) => transport.sendMail({ ...toSendMailOptions(message, options.from), signal }),
            catch: (error) => toMailError(error, secrets)
          })
          return { messageId: info.messageId }
        })

        return Mailer.of({ send })
      })
    )
  }

  /**
   * Development/self-hosting mailer: instead of sending, writes every message as
   * an RFC 5322 `.eml` file into `dir`. The message is built by nodemailer with
   * CRLF line endings, so the file holds exactly what would go over SMTP after
   * DATA. Files are named `<UTC timestamp>-<sequence>-<random>.eml` so that a
   * lexical sort is a sort by time, and are written to a dot-prefixed temporary
   * file first and renamed into place, so a reader never sees a partial `.eml`.
   */
  static layerOutbox(options: {
    readonly dir: string
    readonly from: string
  }): Layer.Layer<Mailer, MailError> {
    return Layer.effect(
      Mailer,
      Effect.gen(function*() {
        const dir = Path.resolve(options.dir)
        yield* Effect.tryPromise({
          try: () => Fs.mkdir(dir, { recursive: true, mode: 0o700 }),
          catch: (error) => toMailError(error, [])
        })
        const transport = nodemailer.createTransport({
          streamTransport: true,
          buffer: true,
          newline: "windows",
          disableFileAccess: true,
          disableUrlAccess: true
        })
        let sequence = 0

        const send = Effect.fn("Mailer.send")(function*(message: MailMessage) {
          const info = yield* Effect.tryPromise({
            try: (signal) => transport.sendMail({ ...toSendMailOptions(message, options.from), signal }),
            catch: (error) => toMailError(error, [])
          })
          if (!Buffer.isBuffer(info.message)) {
            return yield* new MailError({ message: "nodemailer did not return the message as a buffer" })
          }
          const now = yield* Clock.currentTimeMillis
          const name = `${fileTimestamp(now)}-${String(sequence++).padStart(6, "0")}-${
            NodeCrypto.randomBytes(4).toString("hex")
          }.eml`
          const raw = info.message
          yield* Effect.tryPromise({
            try: () => writeFileAtomic(dir, name, raw),
            catch: (error) => toMailError(error, [])
          })
          return { messageId: info.messageId }
        })

        return Mailer.of({ send })
      })
    )
  }
}

const toSendMailOptions = (message: MailMessage, defaultFrom: string): SendMailOptions => ({
  from: message.from ?? defaultFrom,
  to: typeof message.to === "string" ? message.to : [...message.to],
  subject: message.subject,
  text: message.text,
  ...(message.html !== undefined ? { html: message.html } : {}),
  ...(message.headers !== undefined ? { headers: { ...message.headers } } : {})
})

/** The strings that must never show up in an error message: the URL and its password, raw and decoded. */
const smtpUrlSecrets = (url: string): ReadonlyArray<string> => {
  const parsed = new URL(url)
  if (parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") {
    throw new Error("unsupported protocol")
  }
  const secrets = [url]
  if (parsed.password !== "") {
    secrets.push(parsed.password, decodeURIComponent(parsed.password))
  }
  return secrets
}

const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.filter((secret) => secret.length > 0).reduce((acc, secret) => acc.split(secret).join("<redacted>"), text)

const toMailError = (error: unknown, secrets: ReadonlyArray<string>): MailError => {
  const record = typeof error === "object" && error !== null ? error as Record<string, unknown> : {}
  const message = error instanceof Error ? error.message : String(error)
  return new MailError({
    message: redact(message, secrets),
    ...(typeof record.code === "string" ? { code: record.code } : {}),
    ...(typeof record.responseCode === "number" ? { responseCode: record.responseCode } : {})
  })
}

/** `20260115T103000123Z`: ISO 8601 basic format, fixed width, sorts lexically, valid on every file system. */
const fileTimestamp = (millis: number): string => new Date(millis).toISOString().replace(/[-:.]/g, "")

const writeFileAtomic = async (dir: string, name: string, data: Uint8Array): Promise<void> => {
  const temp = Path.join(dir, `.${name}.${NodeCrypto.randomBytes(6).toString("hex")}.tmp`)
  try {
    const handle = await Fs.open(temp, "wx", 0o600)
    try {
      await handle.writeFile(data)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await Fs.rename(temp, Path.join(dir, name))
  } catch (error) {
    await Fs.rm(temp, { force: true })
    throw error
  }
}
