import { Schema } from "effect"

/**
 * E-mail subscriptions to a public status page (spec `POST /api/v1/subscribe`, GUIDE §6).
 * Success is 200 `{success: true, message}`; a refusal is 400 `{success: false, error,
 * message}`. The answer is the same whether or not the address was already subscribed.
 */
export const SubscribeRequest = Schema.Struct({
  orgSlug: Schema.String.check(Schema.isMaxLength(40)),
  email: Schema.String.check(Schema.isMaxLength(254)),
  /** The ALTCHA widget's payload: base64 of `{challenge, solution}`. Works once. */
  challengeToken: Schema.String.check(Schema.isMaxLength(8192)),
  /** Component ids of the organization; omitted or empty: every component. */
  components: Schema.optional(Schema.Array(Schema.String.check(Schema.isMaxLength(64))).check(Schema.isMaxLength(50)))
})
export type SubscribeRequest = typeof SubscribeRequest.Type

export const SubscribeResult = Schema.Struct({ success: Schema.Literal(true), message: Schema.String })
export type SubscribeResult = typeof SubscribeResult.Type

export const SubscribeErrorCode = Schema.Literals([
  "validation_error",
  "invalid_challenge",
  "challenge_expired",
  "challenge_used",
  "not_found"
])
export type SubscribeErrorCode = typeof SubscribeErrorCode.Type

export class SubscribeFailed extends Schema.Error<SubscribeFailed>("SubscribeFailed")({
  success: Schema.Literal(false),
  error: SubscribeErrorCode,
  message: Schema.String
}, { httpApiStatus: 400 }) {}

/** An ALTCHA challenge as the widget fetches it (altcha-lib v2 `Challenge`). */
export const AltchaChallenge = Schema.Struct({
  parameters: Schema.Record(Schema.String, Schema.Unknown),
  signature: Schema.optional(Schema.String)
})
