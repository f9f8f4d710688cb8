import { Effect, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import * as Zlib from "node:zlib"
import type { ApiScope } from "../../../schemas/tenancy/Tenancy.ts"
import type { ApiKeys, Principal } from "../../../services/tenancy/ApiKeys.ts"
import { noteOrganization } from "../RequestState.ts"

/**
 * What the ingest routes share (ours and Sentry's): reading a possibly compressed body
 * within the ingest limit and the three ways an ingest key arrives (handing prepared
 * events to the organization's ingest stream: `IngestSubmitter`).
 */

export const ingestBodyLimit = 10 * 1024 * 1024

/** A refusal answered with the GUIDE §4 body. */
export class IngestRefused extends Schema.TaggedError<IngestRefused>()("IngestRefused", {
  status: Schema.Number,
  error: Schema.Literals([
    "validation_error",
    "unauthorized",
    "forbidden",
    "payload_too_large",
    "unsupported_media_type"
  ]),
  message: Schema.String
}) {}

const refuse = (status: number, error: IngestRefused["error"], message: string) =>
  new IngestRefused({ status, error, message })

/**
 * The body bytes, inflated when `Content-Encoding` is gzip or deflate. The inflated size is
 * held to the same limit, so a small compressed bomb is refused (413), not expanded.
 */
export const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(request.arrayBuffer, (buffer) => {
    const raw = new Uint8Array(buffer)
    const encoding = (request.headers["content-encoding"] ?? "identity").trim().toLowerCase()
    if (encoding === "identity" || encoding === "") return Effect.succeed(raw)
    if (encoding !== "gzip" && encoding !== "deflate") {
      return Effect.fail(refuse(415, "unsupported_media_type", `Content-Encoding '${encoding}' is not supported`))
    }
    return Effect.try({
      try: () =>
        encoding === "gzip"
          ? Zlib.gunzipSync(raw, { maxOutputLength: ingestBodyLimit })
          : Zlib.inflateSync(raw, { maxOutputLength: ingestBodyLimit }),
      catch: (error) =>
        (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE"
          ? refuse(413, "payload_too_large", `The decompressed body is over ${ingestBodyLimit} bytes`)
          : refuse(400, "validation_error", `The body is not valid ${encoding} data`)
    })
  })

export const parseJson = (bytes: Uint8Array) =>
  Effect.try({
    try: () => JSON.parse(new TextDecoder().decode(bytes)) as unknown,
    catch: () => refuse(400, "validation_error", "The body is not valid JSON")
  })

const needScope = (principal: Principal, scope: ApiScope) =>
  principal.scopes.includes(scope)
    ? Effect.succeed(principal)
    : Effect.fail(refuse(403, "forbidden", `This key lacks the '${scope}' scope`))

const unauthorized = (message: string) => refuse(401, "unauthorized", message)

const authenticateKey = (keys: ApiKeys["Service"], secret: string) =>
  keys.authenticate(secret).pipe(
    Effect.mapError(() => unauthorized("Missing, malformed, unknown or revoked API key")),
    Effect.tap((principal) => noteOrganization(principal.org.id))
  )

/**
 * `Authorization: Bearer <key>`, or `X-Service-DSN: https://<key>@<host>/<org-slug>` whose
 * key must belong to the named organization. Either way the key needs `observe:ingest`.
 */
export const authenticateIngest = (keys: ApiKeys["Service"], request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const authorization = request.headers["authorization"]
    const bearer = authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1]
    if (bearer !== undefined) return yield* needScope(yield* authenticateKey(keys, bearer), "observe:ingest")
    const dsn = request.headers["x-service-dsn"]
    if (dsn === undefined) return yield* unauthorized("Send an API key as a Bearer token or an X-Service-DSN header")
    const parsed = URL.canParse(dsn) ? new URL(dsn) : undefined
    const slug = parsed?.pathname.replace(/^\/+|\/+$/g, "")
    if (parsed === undefined || parsed.username === "" || slug === undefined || slug === "") {
      return yield* unauthorized("X-Service-DSN must look like https://<key>@<host>/<org-slug>")
    }
    const principal = yield* authenticateKey(keys, decodeURIComponent(parsed.username))
    if (principal.org.slug !== slug) {
      return yield* unauthorized("The DSN's key does not belong to the organization it names")
    }
    return yield* needScope(principal, "observe:ingest")
  })

/**
 * A Sentry SDK's key: `X-Sentry-Auth: Sentry sentry_key=<key>, ...` or `?sentry_key=`,
 * for the organization whose numeric project id is in the path.
 */
export const authenticateSentry = (
  keys: ApiKeys["Service"],
  request: HttpServerRequest.HttpServerRequest,
  projectId: string
) =>
  Effect.gen(function*() {
    const header = request.headers["x-sentry-auth"] ?? request.headers["authorization"] ?? ""
    const fromHeader = /sentry_key\s*=\s*([^,\s]+)/.exec(header)?.[1]
    const query = request.url.indexOf("?")
    const fromQuery = query < 0 ? null : new URLSearchParams(request.url.slice(query + 1)).get("sentry_key")
    const secret = fromHeader ?? fromQuery ?? undefined
    if (secret === undefined) return yield* unauthorized("Send the key as X-Sentry-Auth sentry_key or ?sentry_key=")
    const principal = yield* authenticateKey(keys, secret)
    if (String(principal.org.projectId) !== projectId) {
      return yield* unauthorized("The key does not belong to this project")
    }
    return yield* needScope(principal, "observe:ingest")
  })
