import { Clock, Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EventPreparation } from "../../../services/observe/EventPreparation.ts"
import { submitter } from "../../../services/observe/IngestSubmitter.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { authenticateSentry, IngestRefused, parseJson, readBody } from "./IngestRequest.ts"
import { EnvelopeError, fromSentryEvent, fromSentryItem, parseEnvelope } from "./SentryProtocol.ts"

/**
 * Sentry SDK compatibility (GUIDE §7): `POST /api/{projectId}/envelope/` and
 * `/api/{projectId}/store/` with `X-Sentry-Auth: Sentry sentry_key=…` or `?sentry_key=`,
 * gzip or deflate bodies, and CORS so browser SDKs can post from any origin. Events go
 * through the same preparation and ingest stream as `POST /api/v1/observe/ingest`.
 * Answers 200 `{id}` as Sentry does; items that fail validation are dropped (an SDK
 * cannot act on per-item errors).
 */

const cors = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "x-sentry-auth, content-type, content-encoding, sentry-trace, baggage",
  "access-control-expose-headers": "x-sentry-error, x-sentry-rate-limits, retry-after",
  "access-control-max-age": "86400"
}

const preflight = HttpServerResponse.empty({ status: 204, headers: cors })

export const SentryRoutes = Layer.unwrap(Effect.gen(function*() {
  const keys = yield* ApiKeys
  const preparation = yield* EventPreparation
  const submit = yield* submitter

  const ingest = (kind: "envelope" | "store") =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const projectId = request.url.split("?")[0].split("/")[2] ?? ""
      const principal = yield* authenticateSentry(keys, request, projectId)
      const bytes = yield* readBody(request)
      let entries: ReadonlyArray<unknown>
      let id: string | undefined
      if (kind === "envelope") {
        const envelope = yield* Effect.try({
          try: () => parseEnvelope(bytes),
          catch: (error) =>
            new IngestRefused({
              status: 400,
              error: "validation_error",
              message: error instanceof EnvelopeError ? error.message : "The envelope could not be read"
            })
        })
        entries = envelope.items.flatMap((item) => fromSentryItem(item, envelope.header))
        id = typeof envelope.header.event_id === "string" ? envelope.header.event_id : undefined
      } else {
        const body = yield* parseJson(bytes)
        if (typeof body !== "object" || body === null) {
          return yield* new IngestRefused({ status: 400, error: "validation_error", message: "Expected an event" })
        }
        entries = (body as { type?: unknown }).type === "transaction"
          ? fromSentryItem({ type: "transaction", payload: body })
          : [fromSentryEvent(body as Record<string, unknown>)]
        id = (body as { event_id?: unknown }).event_id as string | undefined
      }
      const prepared = yield* preparation.prepareEvents(principal.org.id, entries, yield* Clock.currentTimeMillis)
      if (prepared.rejected.length > 0) {
        yield* Effect.logDebug("Sentry items dropped", prepared.rejected).pipe(
          Effect.annotateLogs({ orgId: principal.org.id })
        )
      }
      const headers = prepared.events.length > 0 ? yield* submit(principal, prepared.events) : {}
      return HttpServerResponse.jsonUnsafe(
        { id: id ?? prepared.events[0]?.eventId ?? prepared.events[0]?.id ?? null },
        {
          status: 200,
          headers: { ...cors, ...headers }
        }
      )
    }).pipe(
      Effect.catchTag("IngestRefused", (refused) =>
        Effect.succeed(
          errorResponse(refused.status, refused.error, refused.message).pipe(HttpServerResponse.setHeaders(cors))
        ))
    )

  return Layer.mergeAll(
    HttpRouter.add("POST", "/api/:projectId/envelope/", ingest("envelope")),
    HttpRouter.add("POST", "/api/:projectId/store/", ingest("store")),
    HttpRouter.add("OPTIONS", "/api/:projectId/envelope/", preflight),
    HttpRouter.add("OPTIONS", "/api/:projectId/store/", preflight)
  )
}))
