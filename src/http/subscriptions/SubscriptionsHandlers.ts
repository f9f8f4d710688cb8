import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as SchemaIssue from "effect/SchemaIssue"
import { SubscribeRequest } from "../../../schemas/subscriptions/Subscriptions.ts"
import { Challenges } from "../../../services/subscriptions/Challenges.ts"
import { Subscriptions } from "../../../services/subscriptions/Subscriptions.ts"
import { CanopyApi } from "../Api.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()
const decodeSubscribe = Schema.decodeUnknownResult(SubscribeRequest)

/**
 * GUIDE §6: every subscribe failure is 400 `{success: false, error, message}`, a body that
 * fails its Schema (a missing `challengeToken`, say) or is not JSON included; `details`
 * names the fields as in a GUIDE §4 validation error.
 */
const invalid = (message: string, details: ReadonlyArray<{ path: string; message: string }> = []) =>
  HttpServerResponse.jsonUnsafe(
    { success: false, error: "validation_error", message, ...(details.length > 0 ? { details } : {}) },
    { status: 400 }
  )

export const SubscriptionsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "subscriptions",
  Effect.fn(function*(handlers) {
    const challenges = yield* Challenges
    const subscriptions = yield* Subscriptions
    return handlers.handle("challenge", () =>
      Effect.map(challenges.issue, (challenge) => ({
        parameters: { ...challenge.parameters },
        ...(challenge.signature === undefined ? {} : { signature: challenge.signature })
      }))).handleRaw("subscribe", ({ request }) =>
        Effect.gen(function*() {
          const body = yield* Effect.option(request.json)
          if (body._tag === "None") return invalid("The request body must be a JSON object")
          const decoded = decodeSubscribe(body.value)
          if (decoded._tag === "Failure") {
            const details = formatIssues(decoded.failure.issue).issues.map((issue) => ({
              path: ["body", ...(issue.path ?? []).map((s) => String(typeof s === "object" ? s.key : s))].join("."),
              message: issue.message
            }))
            return invalid(
              details.length === 1
                ? `Invalid ${details[0].path}: ${details[0].message}`
                : "The request body is invalid",
              details
            )
          }
          return yield* subscriptions.subscribe(decoded.success)
        }))
  })
)
