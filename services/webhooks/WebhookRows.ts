import { Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import {
  type CreateWebhook,
  type UpdateWebhook,
  WEBHOOK_DEFAULTS,
  WebhookContentType
} from "../../schemas/webhooks/Webhooks.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The `webhooks` table: its rows (every row is decoded with one of these Schemas before it
 * leaves `Webhooks`, the table's one owner) and every statement on it. Each takes the
 * caller's `SqlClient`, so it runs in the caller's transaction.
 */

/** Where a webhook belongs: the organization (`repoId` null) or one of its repositories. */
export interface WebhookScope {
  readonly orgId: string
  readonly repoId: string | null
}

/** A stored webhook (`SELECT *`, `RETURNING *`); `secret_enc` is never returned by the API. */
export const WebhookRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  repo_id: Schema.NullOr(Schema.String),
  url: Schema.String,
  secret_enc: Schema.NullOr(Schema.String),
  content_type: WebhookContentType,
  events: Schema.Array(Schema.String),
  is_active: Schema.Boolean,
  max_retries: Schema.Int,
  retry_interval_seconds: Schema.Int,
  failing_since: Schema.NullOr(Schema.Date),
  disabled_reason: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type WebhookRow = typeof WebhookRow.Type

/** What the delivery log says of a webhook. */
export const DeliveryCounts = Schema.Struct({
  delivery_count: Int8,
  failure_count: Int8,
  last_delivery_at: Schema.NullOr(Schema.Date)
})
export type DeliveryCounts = typeof DeliveryCounts.Type

/** A webhook with its delivery counts, as the API lists it. */
export const CountedWebhookRow = Schema.Struct({ ...WebhookRow.fields, ...DeliveryCounts.fields })

/** A webhook a statement touched. */
export const WebhookIdRow = Schema.Struct({ id: Schema.String })

/** A secret still in the legacy, purpose-free ciphertext format. */
const LegacySecretRow = Schema.Struct({ id: Schema.String, org_id: Schema.String, secret_enc: Schema.String })

/** Secrets stored before purpose binding (`v1.` ciphertexts). */
export const legacySecrets = (sql: SqlClient.SqlClient) =>
  sql`SELECT id, org_id, secret_enc FROM webhooks WHERE secret_enc LIKE 'v1.%'`.pipe(decodeRows(LegacySecretRow))

/** Rewrites a secret's ciphertext unless it changed meanwhile (runners may race). */
export const replaceSecret = (sql: SqlClient.SqlClient, id: string, previous: string, next: string) =>
  sql`UPDATE webhooks SET secret_enc = ${next} WHERE id = ${id} AND secret_enc = ${previous}`

/** A failure noted: the webhook's organization, and whether this failure disabled it. */
export const OutcomeRow = Schema.Struct({ org_id: Schema.String, just_disabled: Schema.Boolean })

/** An organization's plan and how many webhooks one of its scopes has. */
export const ScopeCountRow = Schema.Struct({ plan: Plan, count: Int8 })

/** A webhook's encrypted secret (a transfer re-encrypts it). */
export const SecretRow = Schema.Struct({ id: Schema.String, secret_enc: Schema.NullOr(Schema.String) })

/** A repository's webhooks with their secrets, locked (a transfer moves them). */
export const repositorySecrets = (sql: SqlClient.SqlClient, orgId: string, repoId: string) =>
  sql`SELECT id, secret_enc FROM webhooks WHERE org_id = ${orgId} AND repo_id = ${repoId} FOR UPDATE`.pipe(
    decodeRows(SecretRow)
  )

/** A webhook moves to another organization with its secret re-encrypted there. */
export const moveWebhook = (sql: SqlClient.SqlClient, id: string, orgId: string, secretEnc: string | null) =>
  sql`UPDATE webhooks SET org_id = ${orgId}, secret_enc = ${secretEnc}, updated_at = now() WHERE id = ${id}`

/** A purged repository's webhooks go with it. */
export const deleteRepositoryWebhooks = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`DELETE FROM webhooks WHERE repo_id = ${repoId}`

const inScope = (sql: SqlClient.SqlClient, scope: WebhookScope) =>
  sql`org_id = ${scope.orgId} AND repo_id IS NOT DISTINCT FROM ${scope.repoId}`

/** Serialises creations in one scope (until commit), so two at once cannot both pass the count. */
export const lockScope = (sql: SqlClient.SqlClient, scope: WebhookScope) =>
  sql`SELECT pg_advisory_xact_lock(hashtext(${`webhooks:${scope.orgId}:${scope.repoId ?? ""}`}))`

/** How many webhooks the scope has, with the organization's `plan` (an SQL expression). */
export const countInScope = (sql: SqlClient.SqlClient, scope: WebhookScope, plan: Statement.Fragment) =>
  sql`SELECT ${plan} AS plan, count(*) AS count FROM webhooks WHERE ${inScope(sql, scope)}`.pipe(
    decodeRows(ScopeCountRow)
  )

export const insertWebhook = (
  sql: SqlClient.SqlClient,
  scope: WebhookScope,
  input: CreateWebhook,
  secretEnc: string | null,
  now: string,
  /** Chosen before, when the secret's ciphertext is bound to it. */
  id: string = makeId("webhook")
) =>
  sql`
    INSERT INTO webhooks (
      id, org_id, repo_id, url, secret_enc, content_type, events, is_active, max_retries,
      retry_interval_seconds, created_at, updated_at
    ) VALUES (
      ${id}, ${scope.orgId}, ${scope.repoId}, ${input.url}, ${secretEnc},
      ${input.contentType ?? WEBHOOK_DEFAULTS.contentType},
      ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(input.events)}::jsonb)),
      ${input.isActive ?? WEBHOOK_DEFAULTS.isActive}, ${input.maxRetries ?? WEBHOOK_DEFAULTS.maxRetries},
      ${input.retryIntervalSeconds ?? WEBHOOK_DEFAULTS.retryIntervalSeconds},
      ${now}::timestamptz, ${now}::timestamptz
    ) RETURNING *`.pipe(decodeRows(WebhookRow))

/** The scope's webhooks (or the one `id`) with their delivery counts, newest first. */
export const webhooksWithCounts = (sql: SqlClient.SqlClient, scope: WebhookScope, id?: string) =>
  sql`
    SELECT w.*, d.delivery_count, d.failure_count, d.last_delivery_at FROM webhooks w
    LEFT JOIN LATERAL (
      SELECT count(*) AS delivery_count, count(*) FILTER (WHERE status = 'failed') AS failure_count,
        max(delivered_at) AS last_delivery_at
      FROM webhook_deliveries WHERE webhook_id = w.id
    ) d ON true
    WHERE ${id === undefined ? sql.literal("") : sql`w.id = ${id} AND`} ${inScope(sql, scope)}
    ORDER BY w.created_at DESC, w.id DESC`.pipe(decodeRows(CountedWebhookRow))

/** Sets what `patch` gives (`secretEnc` undefined: unchanged); the id, if the webhook is in scope. */
export const updateWebhookRow = (
  sql: SqlClient.SqlClient,
  scope: WebhookScope,
  id: string,
  patch: UpdateWebhook,
  secretEnc: string | null | undefined,
  now: string
) => {
  const none = sql.literal("")
  const set = (column: string, value: unknown) => value === undefined ? none : sql`, ${sql(column)} = ${value}`
  return sql`
    UPDATE webhooks SET updated_at = ${now}::timestamptz
      ${set("url", patch.url)}${set("content_type", patch.contentType)}
      ${set("max_retries", patch.maxRetries)}${set("retry_interval_seconds", patch.retryIntervalSeconds)}
      ${secretEnc === undefined ? none : sql`, secret_enc = ${secretEnc}`}
      ${
    patch.events === undefined
      ? none
      : sql`, events = ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(patch.events)}::jsonb))`
  }
      ${
    patch.isActive === undefined
      ? none
      // Re-enabled by hand: the failure streak starts over.
      : sql`, is_active = ${patch.isActive}, failing_since = NULL, disabled_reason = NULL`
  }
    WHERE id = ${id} AND ${inScope(sql, scope)}
    RETURNING id`.pipe(decodeRows(WebhookIdRow))
}

export const deleteWebhook = (sql: SqlClient.SqlClient, scope: WebhookScope, id: string) =>
  sql`DELETE FROM webhooks WHERE id = ${id} AND ${inScope(sql, scope)} RETURNING id`.pipe(decodeRows(WebhookIdRow))

/** The webhook (none, or one row), in `scope` when given. */
export const findWebhook = (sql: SqlClient.SqlClient, id: string, scope?: WebhookScope) =>
  sql`SELECT * FROM webhooks WHERE id = ${id} ${
    scope === undefined ? sql.literal("") : sql`AND ${inScope(sql, scope)}`
  }`
    .pipe(decodeRows(WebhookRow))

/** A delivery succeeded: the failure streak, if any, ends. */
export const endFailureStreak = (sql: SqlClient.SqlClient, id: string) =>
  sql`UPDATE webhooks SET failing_since = NULL WHERE id = ${id} AND failing_since IS NOT NULL`

/** A delivery failed at `at`: a streak starts, or, begun before `cutoff`, disables the webhook. */
export const noteFailure = (sql: SqlClient.SqlClient, id: string, at: Date, cutoff: Date) =>
  sql`
    UPDATE webhooks SET
      failing_since = coalesce(failing_since, ${at.toISOString()}::timestamptz),
      is_active = is_active AND NOT coalesce(failing_since <= ${cutoff.toISOString()}::timestamptz, false),
      disabled_reason = CASE WHEN failing_since <= ${cutoff.toISOString()}::timestamptz
        THEN 'Every delivery attempt failed for 5 days' ELSE disabled_reason END
    WHERE id = ${id}
    RETURNING org_id, NOT is_active AND failing_since <= ${cutoff.toISOString()}::timestamptz AS just_disabled`.pipe(
    decodeRows(OutcomeRow)
  )
