import { Effect } from "effect"
import type * as Net from "node:net"
import { SMTPServer } from "smtp-server"

/** One message accepted by the test SMTP server, with its headers unfolded and its body decoded. */
export interface ReceivedMail {
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly headers: Readonly<Record<string, string>>
  /** The whole message with quoted-printable soft breaks and escapes undone (links are whole). */
  readonly body: string
}

const decodeQuotedPrintable = (text: string) =>
  text.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))

const parse = (raw: string, to: ReadonlyArray<string>): ReceivedMail => {
  const headEnd = raw.indexOf("\r\n\r\n")
  const head = raw.slice(0, headEnd).replace(/\r\n[ \t]+/g, " ")
  const headers: Record<string, string> = {}
  for (const line of head.split("\r\n")) {
    const colon = line.indexOf(":")
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { to, subject: headers.subject ?? "", headers, body: decodeQuotedPrintable(raw.slice(headEnd + 4)) }
}

/**
 * A real SMTP server (`smtp-server` from npm) on 127.0.0.1, no authentication, recording
 * every accepted message. While `reject` is true it answers every DATA with a temporary
 * failure (451), as a server in trouble would. Closed with the scope.
 */
export const startSmtpServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: SMTPServer; url: string; received: Array<ReceivedMail>; state: { reject: boolean } }>(
      (resolve, reject) => {
        const received: Array<ReceivedMail> = []
        const state = { reject: false }
        const server = new SMTPServer({
          secure: false,
          authOptional: true,
          disabledCommands: ["STARTTLS", "AUTH"],
          logger: false,
          closeTimeout: 1000,
          onData(stream, session, callback) {
            const chunks: Array<Buffer> = []
            stream.on("data", (chunk: Buffer) => chunks.push(chunk))
            stream.on("error", callback)
            stream.on("end", () => {
              if (state.reject) {
                const error = new Error("Try again later") as Error & { responseCode: number }
                error.responseCode = 451
                return callback(error)
              }
              received.push(parse(
                Buffer.concat(chunks).toString("utf8"),
                session.envelope.rcptTo.map((rcpt) => rcpt.address)
              ))
              callback()
            })
          }
        })
        server.on("error", reject)
        server.listen(0, "127.0.0.1", () => {
          const port = (server.server.address() as Net.AddressInfo).port
          resolve({ server, url: `smtp://127.0.0.1:${port}`, received, state })
        })
      }
    )
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)
