import { Clock, Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EventPreparation } from "../../../services/observe/EventPreparation.ts"
import { submitter } from "../../../services/observe/IngestSubmitter.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { authenticateIngest, IngestRefused, parseJson, readBody } from "./IngestRequest.ts"

/**
 * `POST /api/v1/observe/ingest` (spec "Observe (ingestion)", GUIDE §7): a raw route so
 * the body can arrive gzip-compressed and a batch can be validated entry by entry.
 * Outside the request quota; the response's rate-limit headers describe the event quota.
 *
 * - single event → 202 `{id, status: "accepted"}`; invalid → 400
 * - `{events: [...]}` → 202 `{success, accepted, message, rejected?}`; the valid entries
 *   are kept and the invalid ones listed by index; none valid → 400 with the same list
 */
export const IngestRoute = Layer.unwrap(Effect.gen(function*() {
  const keys = yield* ApiKeys
  const preparation = yield* EventPreparation
  const submit = yield* submitter

  const handle = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const principal = yield* authenticateIngest(keys, request)
    const contentType = request.headers["content-type"]
    if (contentType !== undefined && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType)) {
      return yield* new IngestRefused({
        status: 415,
        error: "unsupported_media_type",
        message: "Send the body as application/json"
      })
    }
    const body = yield* parseJson(yield* readBody(request))
    const prepared = yield* preparation.prepare(principal.org.id, body, yield* Clock.currentTimeMillis).pipe(
      Effect.mapError((invalid) =>
        new IngestRefused({ status: 400, error: "validation_error", message: invalid.message })
      )
    )
    if (prepared.events.length === 0) {
      return errorResponse(400, "validation_error", "No valid event in the batch", {
        details: prepared.rejected.map((entry) => ({ path: `body.events.${entry.index}`, message: entry.error }))
      })
    }
    const headers = yield* submit(principal, prepared.events)
    if (prepared.single) {
      return HttpServerResponse.jsonUnsafe({ id: prepared.events[0].id, status: "accepted" }, { status: 202, headers })
    }
    const accepted = prepared.events.length
    return HttpServerResponse.jsonUnsafe({
      success: true,
      accepted,
      message: prepared.rejected.length === 0
        ? `${accepted} events accepted`
        : `${accepted} events accepted, ${prepared.rejected.length} rejected`,
      ...(prepared.rejected.length > 0 ? { rejected: prepared.rejected } : {})
    }, { status: 202, headers })
  }).pipe(
    Effect.catchTag(
      "IngestRefused",
      (refused) => Effect.succeed(errorResponse(refused.status, refused.error, refused.message))
    )
  )

  return HttpRouter.add("POST", "/api/v1/observe/ingest", handle)
}))
