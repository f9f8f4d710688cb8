import { Cause, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Mailer, MailError } from "./Mailer.ts"
import { claimDueMails, type ClaimedMail, insertMails, markMailFailed, markMailSent } from "./MailOutboxRows.ts"

/**
 * The durable mail outbox: notifications are rows of `mail_outbox`, written in the
 * transaction that decided to send them (usually a durable Events consumer's, so the
 * event cursor and the mail commit together), and sent by a loop on every runner.
 *
 * - Nothing is lost: a row stays until an SMTP server accepted it (or it failed for good
 *   after `maxAttempts`); a crash before that leaves it due again.
 * - Nothing is enqueued twice: `idempotencyKey` is unique and a replayed insert is a no-op.
 * - Nothing is sent twice by two runners: a batch is claimed by pushing its due time to the
 *   end of a lease (`FOR UPDATE SKIP LOCKED`) before sending. The one window left is a crash
 *   between the server's acceptance and the `sent_at` update, which resends after the lease
 *   (at-least-once is all SMTP allows).
 */
export interface OutboxMail {
  /** Unique per mail: what it is about and who gets it. */
  readonly idempotencyKey: string
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

export interface MailOutboxOptions {
  /** How often each runner looks for due mail. Default 1 second. */
  readonly pollInterval?: Duration.Input | undefined
  /** Delay before the first retry; doubled per attempt up to an hour. Default 2 seconds. */
  readonly retryBase?: Duration.Input | undefined
  /** Attempts before a mail is given up (`failed_at`). Default 12 (about a day with backoff). */
  readonly maxAttempts?: number | undefined
}

/** A claimed mail is not due again before this (a runner that died mid-send). */
const LEASE_SECONDS = 120
const BATCH = 20
const MAX_BACKOFF_MS = 3_600_000

/**
 * Adds mails to the outbox inside the caller's transaction (or its own); a key already
 * present is skipped. Returns how many were new.
 */
export const enqueueMails = (
  mails: ReadonlyArray<OutboxMail>
): Effect.Effect<number, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    if (mails.length === 0) return 0
    const sql = yield* SqlClient.SqlClient
    const rows = yield* insertMails(
      sql,
      mails.map((mail) => ({
        key: mail.idempotencyKey,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html ?? null,
        headers: mail.headers ?? {}
      }))
    )
    return rows.length
  })

export class MailOutbox extends Context.Service<MailOutbox, {
  readonly enqueue: (mails: ReadonlyArray<OutboxMail>) => Effect.Effect<number, SqlError, SqlClient.SqlClient>
  /** Sends every due mail now (the loop does this on its own; tests and shutdown use it). */
  readonly flush: Effect.Effect<void, SqlError>
}>()("canopy/mail/MailOutbox") {
  static readonly layerWith = (options: MailOutboxOptions = {}) =>
    Layer.effect(
      MailOutbox,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const mailer = yield* Mailer
        const pollInterval = Duration.fromInputUnsafe(options.pollInterval ?? "1 second")
        const retryBaseMs = Duration.toMillis(Duration.fromInputUnsafe(options.retryBase ?? "2 seconds"))
        const maxAttempts = options.maxAttempts ?? 12

        const claim = claimDueMails(sql, BATCH, LEASE_SECONDS)

        const deliver = (mail: ClaimedMail) =>
          mailer.send({
            to: mail.recipient,
            subject: mail.subject,
            text: mail.textBody,
            html: mail.htmlBody ?? undefined,
            headers: mail.headers ?? undefined
          }).pipe(
            // Well inside the lease, so no other runner picks the mail up while this send is running.
            Effect.timeoutOrElse({
              duration: "60 seconds",
              orElse: () => Effect.fail(new MailError({ message: "Sending timed out after 60 s" }))
            }),
            Effect.andThen(markMailSent(sql, mail.id)),
            Effect.catchTag("MailError", (error) => {
              const giveUp = mail.attempts >= maxAttempts
              const delayMs = Math.min(MAX_BACKOFF_MS, retryBaseMs * 2 ** (mail.attempts - 1))
              // The recipient is personal data: log the row id only.
              return Effect.logWarning("MailOutbox: sending failed", error.message).pipe(
                Effect.annotateLogs({ mailId: mail.id, attempts: mail.attempts, giveUp }),
                Effect.andThen(markMailFailed(sql, mail.id, {
                  error: error.message.slice(0, 1000),
                  giveUp,
                  delaySeconds: delayMs / 1000
                }))
              )
            })
          )

        const flushOnce = Effect.flatMap(claim, (mails) =>
          Effect.as(Effect.forEach(mails, deliver, { concurrency: 4, discard: true }), mails.length))
        const flush: Effect.Effect<void, SqlError> = Effect.gen(function*() {
          while ((yield* flushOnce) === BATCH) {
            // a full batch: more may be due
          }
        })

        yield* flush.pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logWarning("MailOutbox: sender pass failed", cause)
          ),
          Effect.repeat(Schedule.spaced(pollInterval)),
          Effect.forkScoped
        )

        return MailOutbox.of({ enqueue: enqueueMails, flush })
      })
    )

  static readonly layer = MailOutbox.layerWith()
}
