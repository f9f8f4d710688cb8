import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `mail_outbox` table: its rows and every statement on it (the sending rules are
 * MailOutbox's).
 */

/** What one outbox row holds before it is sent. */
export interface StoredMail {
  readonly key: string
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string | null
  readonly headers: Readonly<Record<string, string>>
}

/** A mail claimed for sending (`id` is a bigint, read as text). */
const ClaimedMail = Schema.Struct({
  id: Schema.String,
  recipient: Schema.String,
  subject: Schema.String,
  textBody: Schema.String,
  htmlBody: Schema.NullOr(Schema.String),
  headers: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  attempts: Schema.Int
})
export type ClaimedMail = typeof ClaimedMail.Type

/** Inserts the mails whose key is new, returning one row per mail inserted. */
export const insertMails = (sql: SqlClient.SqlClient, mails: ReadonlyArray<StoredMail>) =>
  sql`
    INSERT INTO mail_outbox (idempotency_key, recipient, subject, text_body, html_body, headers)
    SELECT m->>'key', m->>'to', m->>'subject', m->>'text', m->>'html', m->'headers'
    FROM jsonb_array_elements(${JSON.stringify(mails)}::jsonb) AS m
    ON CONFLICT (idempotency_key) DO NOTHING
    RETURNING id`

/** Claims up to `batch` due mails by pushing their due time to the end of a lease of `leaseSeconds`. */
export const claimDueMails = (sql: SqlClient.SqlClient, batch: number, leaseSeconds: number) =>
  sql`
    UPDATE mail_outbox SET attempts = attempts + 1,
      next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
    WHERE id IN (
      SELECT id FROM mail_outbox
      WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
      ORDER BY next_attempt_at LIMIT ${batch}
      FOR UPDATE SKIP LOCKED)
    RETURNING id::text AS id, recipient, subject, text_body AS "textBody", html_body AS "htmlBody", headers, attempts`
    .pipe(decodeRows(ClaimedMail))

export const markMailSent = (sql: SqlClient.SqlClient, id: string) =>
  sql`UPDATE mail_outbox SET sent_at = now(), last_error = NULL WHERE id = ${id}`

/** Records a failed send: due again after `delaySeconds`, or failed for good with `giveUp`. */
export const markMailFailed = (
  sql: SqlClient.SqlClient,
  id: string,
  failure: { readonly error: string; readonly giveUp: boolean; readonly delaySeconds: number }
) =>
  sql`
    UPDATE mail_outbox SET last_error = ${failure.error},
      failed_at = ${failure.giveUp ? sql.literal("now()") : sql.literal("NULL")},
      next_attempt_at = now() + make_interval(secs => ${failure.delaySeconds})
    WHERE id = ${id}`
