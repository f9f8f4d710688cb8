import { Schema } from "effect"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { WebhookContentType } from "../../schemas/webhooks/Webhooks.ts"
import { Int8 } from "../platform/Rows.ts"

/**
 * The rows `Webhooks` reads, as Schemas (every row is decoded with one of these before it
 * leaves the service): the `webhooks` table's, and the few it reads from tenancy's tables.
 */

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

/** A failure noted: the webhook's organization, and whether this failure disabled it. */
export const OutcomeRow = Schema.Struct({ org_id: Schema.String, just_disabled: Schema.Boolean })

/** An organization's plan and how many webhooks one of its scopes has. */
export const ScopeCountRow = Schema.Struct({ plan: Plan, count: Int8 })

/** An owner's e-mail address (from tenancy's `memberships` and `users`). */
/** A webhook's encrypted secret (a transfer re-encrypts it). */
export const SecretRow = Schema.Struct({ id: Schema.String, secret_enc: Schema.NullOr(Schema.String) })

export const OwnerEmailRow = Schema.Struct({ email: Schema.String })
