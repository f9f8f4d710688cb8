import { Schema } from "effect"
import { ValidationError } from "../platform/Errors.ts"
import { Plan } from "../tenancy/Tenancy.ts"

/**
 * Webhooks (spec 001 "Webhook", "Events"; GUIDE §13): the settings, the delivery log and
 * the event types a webhook may subscribe to.
 *
 * Wire choices where the spec is silent: `secret` is never returned (`hasSecret` says
 * whether one is set); a delivery's `responseCode`, `durationMs` and `deliveredAt` are `null`
 * until its first attempt finished; a delivery is `pending`, `success` or `failed`.
 */

/** Repository webhook events (spec 001 "Events"). */
export const repositoryEvents = [
  "push",
  "create",
  "delete",
  "release",
  "pull_request.opened",
  "pull_request.closed",
  "pull_request.merged",
  "pull_request.updated",
  "pull_request.review_requested",
  "pull_request.review_submitted",
  "issue.opened",
  "issue.closed",
  "issue.updated",
  "issue.commented",
  "ci.run_started",
  "ci.run_completed",
  "ci.job_completed",
  "ai_review.started",
  "ai_review.completed",
  "ai_review.suggestion_applied"
] as const

/** Organization webhook events (GUIDE §13). */
export const organizationEvents = [
  "monitor.down",
  "monitor.up",
  "monitor.degraded",
  "incident.created",
  "incident.updated",
  "incident.resolved",
  "observe.issue.created",
  "observe.issue.regressed",
  "observe.spike"
] as const

/** The event a test request sends (`POST …/test`), whatever the subscription. */
export const PING_EVENT = "ping"

export const WebhookContentType = Schema.Literals(["application/json", "application/x-www-form-urlencoded"])
export type WebhookContentType = typeof WebhookContentType.Type

export const WEBHOOK_DEFAULTS = {
  contentType: "application/json",
  maxRetries: 3,
  retryIntervalSeconds: 60,
  isActive: true
} as const

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

export const WebhookUrl = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048))
export const WebhookSecret = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256))
export const MaxRetries = between(0, 10)
export const RetryIntervalSeconds = between(10, 3600)

/** A subscription list: non-empty, each one of `allowed` or `*`, no duplicates. */
const eventList = (allowed: ReadonlyArray<string>) =>
  Schema.Array(Schema.String).check(
    Schema.isMinLength(1, { message: "must name at least one event" }),
    Schema.isMaxLength(50),
    Schema.makeFilter((events) =>
      events.flatMap((event, index) =>
        event === "*" || allowed.includes(event) ? [] : [{
          path: [index],
          issue: `unknown event '${event}' (expected one of ${allowed.join(", ")} or *)`
        }]
      )
    )
  )

const settings = (allowed: ReadonlyArray<string>) => ({
  secret: Schema.optionalKey(Schema.NullOr(WebhookSecret)),
  contentType: Schema.optionalKey(WebhookContentType),
  events: eventList(allowed),
  isActive: Schema.optionalKey(Schema.Boolean),
  maxRetries: Schema.optionalKey(MaxRetries),
  retryIntervalSeconds: Schema.optionalKey(RetryIntervalSeconds)
})

const createWebhook = (allowed: ReadonlyArray<string>, example: ReadonlyArray<string>) =>
  Schema.Struct({ url: WebhookUrl, ...settings(allowed) }).annotate({
    examples: [{ url: "https://hooks.example.com/canopy", secret: "s3cr3t", events: [...example] }]
  })

const updateWebhook = (allowed: ReadonlyArray<string>) => {
  const { events, ...rest } = settings(allowed)
  return Schema.Struct({ url: Schema.optionalKey(WebhookUrl), events: Schema.optionalKey(events), ...rest })
    .annotate({ examples: [{ isActive: false }, { events: ["*"], maxRetries: 5 }] })
}

/** POST body of an organization webhook. `secret: null` is the same as no secret. */
export const CreateOrgWebhook = createWebhook(organizationEvents, ["monitor.down", "monitor.up"])
export type CreateWebhook = typeof CreateOrgWebhook.Type
/** PATCH body: any subset; `secret: null` removes the secret. */
export const UpdateOrgWebhook = updateWebhook(organizationEvents)
export type UpdateWebhook = typeof UpdateOrgWebhook.Type

export const CreateRepoWebhook = createWebhook(repositoryEvents, ["push"])
export const UpdateRepoWebhook = updateWebhook(repositoryEvents)

export const Webhook = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  hasSecret: Schema.Boolean,
  contentType: WebhookContentType,
  events: Schema.Array(Schema.String),
  isActive: Schema.Boolean,
  maxRetries: Schema.Int,
  retryIntervalSeconds: Schema.Int,
  /** Deliveries in the log (within retention). */
  deliveryCount: Schema.Int,
  failureCount: Schema.Int,
  lastDeliveryAt: Schema.NullOr(Schema.String),
  /** Why the webhook was disabled by Canopy (5 days of failures), else null. */
  disabledReason: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type Webhook = typeof Webhook.Type

export const WebhookList = Schema.Struct({ webhooks: Schema.Array(Webhook), count: Schema.Int })
export type WebhookList = typeof WebhookList.Type

export const DeliveryStatus = Schema.Literals(["pending", "success", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

export const Delivery = Schema.Struct({
  id: Schema.String,
  event: Schema.String,
  status: DeliveryStatus,
  responseCode: Schema.NullOr(Schema.Int),
  durationMs: Schema.NullOr(Schema.Int),
  /** Attempts made so far (1 = the first). */
  attempt: Schema.Int,
  deliveredAt: Schema.NullOr(Schema.String),
  redelivery: Schema.Boolean,
  createdAt: Schema.String,
  /** When the next attempt is due while `pending`, else null. */
  nextAttemptAt: Schema.NullOr(Schema.String)
})
export type Delivery = typeof Delivery.Type

export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Int,
  startedAt: Schema.String,
  durationMs: Schema.Int,
  request: Schema.Struct({
    headers: Schema.Record(Schema.String, Schema.String),
    /** First 64 KiB. */
    body: Schema.String
  }),
  /** null when no response arrived (timeout, refused, TLS or DNS failure, blocked address). */
  response: Schema.NullOr(Schema.Struct({
    statusCode: Schema.Int,
    headers: Schema.Record(Schema.String, Schema.String),
    /** First 64 KiB. */
    body: Schema.String
  })),
  error: Schema.NullOr(Schema.String)
})
export type DeliveryAttempt = typeof DeliveryAttempt.Type

/** One delivery in full: its payload and every attempt. */
export const DeliveryDetail = Schema.Struct({
  ...Delivery.fields,
  payload: Schema.Unknown,
  attempts: Schema.Array(DeliveryAttempt)
})
export type DeliveryDetail = typeof DeliveryDetail.Type

export const DeliveryList = Schema.Struct({ deliveries: Schema.Array(Delivery), count: Schema.Int })
export type DeliveryList = typeof DeliveryList.Type

export const ListDeliveriesQuery = {
  status: Schema.optional(DeliveryStatus),
  limit: Schema.optional(between(1, 100)),
  offset: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
}

/** 202 body of redeliver and test: the delivery queued. */
export const DeliveryQueued = Schema.Struct({ delivery: Delivery })
export type DeliveryQueued = typeof DeliveryQueued.Type

/** The organization's plan does not allow this (here: more webhooks); GUIDE §12/§13. */
export class PlanRequired extends Schema.Error<PlanRequired>("PlanRequired")({
  error: Schema.tag("plan_required"),
  message: Schema.String,
  requiredPlan: Plan
}, { httpApiStatus: 403 }) {}

/** A 400 for a rule checked outside Schema decoding (e.g. the URL's scheme against the deployment). */
export const webhookValidationError = (field: string, message: string): ValidationError =>
  new ValidationError({ message: `Invalid body.${field}: ${message}`, details: [{ path: `body.${field}`, message }] })
