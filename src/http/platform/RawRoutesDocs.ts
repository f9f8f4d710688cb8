import { Schema } from "effect"
import { BatchAccepted, ObserveEvent, SingleAccepted } from "../../../schemas/observe/Observe.ts"
import { Widget } from "../../../schemas/status/Status.ts"
import { cleanNumbers } from "./OpenApiDocs.ts"

/**
 * The OpenAPI entries of the public routes served outside HttpApi (raw routes: gzip bodies,
 * RSS, SVG, HTML pages, the Sentry protocol, WebSockets), so the document lists every public
 * HTTP route a client may call. Git smart HTTP and Git LFS are left out: git clients speak
 * them, and they have specifications of their own.
 */

const jsonSchema = (schema: Schema.Top): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(schema)
  return document.schema as Record<string, unknown>
}

const errorBody = {
  type: "object",
  properties: {
    error: { type: "string" },
    message: { type: "string" },
    details: {
      type: "array",
      items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } }
    }
  },
  required: ["error", "message"]
}
const errors = (...statuses: ReadonlyArray<number>) =>
  Object.fromEntries(statuses.map((status) => [
    String(status),
    { description: "GUIDE §4 error body", content: { "application/json": { schema: errorBody } } }
  ]))

const pathParam = (name: string, description: string, schema: Record<string, unknown> = { type: "string" }) => ({
  name,
  in: "path",
  required: true,
  description,
  schema
})
const queryParam = (name: string, description: string, schema: Record<string, unknown> = { type: "string" }) => ({
  name,
  in: "query",
  required: false,
  description,
  schema
})

const slug = pathParam("slug", "The organization's slug")
const projectId = pathParam("projectId", "The organization's numeric Sentry project id", { type: "integer" })
const text = (contentType: string, description: string) => ({
  description,
  content: { [contentType]: { schema: { type: "string" } } }
})
const sentryOperation = (kind: string, summary: string) => ({
  tags: ["sentry"],
  operationId: `sentry${kind}`,
  summary,
  description:
    "Sentry SDK compatibility (GUIDE §7): authenticate with `X-Sentry-Auth: Sentry sentry_key=<key>` or `?sentry_key=`; gzip bodies accepted; CORS for browsers. Events become Observe events, transactions and spans become spans.",
  parameters: [projectId, queryParam("sentry_key", "The DSN's public key, when not in X-Sentry-Auth")],
  requestBody: {
    required: true,
    content: {
      [kind === "Envelope" ? "application/x-sentry-envelope" : "application/json"]: {
        schema: kind === "Envelope" ? { type: "string" } : { type: "object" }
      }
    }
  },
  responses: {
    "200": {
      description: "Accepted; the first event's id",
      content: { "application/json": { schema: { type: "object", properties: { id: { type: "string" } } } } }
    },
    ...errors(400, 401, 413, 429)
  }
})

export const rawRoutePaths: Record<string, Record<string, unknown>> = {
  "/api/v1/observe/ingest": {
    post: {
      tags: ["observe"],
      operationId: "observeIngest",
      summary: "Ingest events",
      description:
        "One event, or `{events: [...]}` (up to 1,000). Bearer key with `observe:ingest`, or `X-Service-DSN`. Gzip bodies accepted (`Content-Encoding: gzip`). A 202 means the events are durable. Outside the request quota: the rate-limit headers describe the plan's event quota (events above it are sampled, never refused).",
      security: [{ bearer: [] }],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              oneOf: [
                jsonSchema(ObserveEvent),
                {
                  type: "object",
                  properties: { events: { type: "array", items: jsonSchema(ObserveEvent), maxItems: 1000 } },
                  required: ["events"]
                }
              ]
            }
          }
        }
      },
      responses: {
        "202": {
          description: "A single event: its id. A batch: how many were accepted, and the invalid entries by index.",
          content: {
            "application/json": { schema: { oneOf: [jsonSchema(SingleAccepted), jsonSchema(BatchAccepted)] } }
          }
        },
        ...errors(400, 401, 403, 413, 415)
      }
    }
  },
  "/api/{projectId}/envelope/": { post: sentryOperation("Envelope", "Sentry envelope") },
  "/api/{projectId}/store/": { post: sentryOperation("Store", "Sentry store (one event)") },
  "/api/v1/widget/{slug}": {
    get: {
      tags: ["status"],
      operationId: "statusWidget",
      summary: "Status widget data",
      description: "Public, CORS-enabled, limited per client IP (100 per minute). `uptime` is the 30-day figure.",
      parameters: [slug],
      responses: {
        "200": { description: "The widget data", content: { "application/json": { schema: jsonSchema(Widget) } } },
        ...errors(404, 429)
      }
    }
  },
  "/api/v1/feed/{slug}": {
    get: {
      tags: ["status"],
      operationId: "statusFeed",
      summary: "Incident feed (RSS 2.0)",
      description: "Public: the 50 newest incidents; cacheable for 5 minutes, with an ETag.",
      parameters: [slug],
      responses: {
        "200": text("application/rss+xml", "The RSS document"),
        "304": { description: "Not modified" },
        ...errors(404, 429)
      }
    }
  },
  "/api/v1/badge/{slug}/{monitorId}": {
    get: {
      tags: ["status"],
      operationId: "uptimeBadge",
      summary: "Uptime badge (SVG)",
      description: "Public: shields.io-style uptime badge of one monitor.",
      parameters: [
        slug,
        pathParam("monitorId", "The monitor's id"),
        queryParam("period", "Uptime window", { type: "string", enum: ["24h", "7d", "30d"] }),
        queryParam("style", "Badge style", {
          type: "string",
          enum: ["flat", "flat-square", "plastic", "for-the-badge"]
        }),
        queryParam("label", "Left-hand text (default `uptime`)")
      ],
      responses: {
        "200": text("image/svg+xml", "The badge"),
        "404": text("image/svg+xml", "A grey \"not found\" badge"),
        ...errors(400, 429)
      }
    }
  },
  "/api/v1/subscribe/confirm": {
    get: {
      tags: ["subscriptions"],
      operationId: "subscribeConfirm",
      summary: "Confirm an e-mail subscription",
      description: "The link of the verification e-mail; answers a small HTML page.",
      parameters: [{ ...queryParam("token", "The token from the e-mail"), required: true }],
      responses: { "200": text("text/html", "Confirmed"), "400": text("text/html", "Unknown or used token") }
    }
  },
  "/api/v1/subscribe/unsubscribe": Object.fromEntries(["get", "post"].map((method) => [method, {
    tags: ["subscriptions"],
    operationId: `unsubscribe${method === "get" ? "Page" : "OneClick"}`,
    summary: method === "get" ? "Unsubscribe (link)" : "Unsubscribe (one-click, RFC 8058)",
    description: "The link in every notification e-mail; answers a small HTML page.",
    parameters: [{ ...queryParam("token", "The token from the e-mail"), required: true }],
    responses: { "200": text("text/html", "Unsubscribed"), "400": text("text/html", "Unknown token") }
  }])),
  "/api/v1/live/{slug}": {
    get: {
      tags: ["live"],
      operationId: "liveStatusStream",
      summary: "Live status stream (WebSocket)",
      description:
        "Public WebSocket: `{type: \"snapshot\", data}` then `{type, data, at}` for `status`, `monitor.status` and `incident.*`.",
      parameters: [slug],
      responses: { "101": { description: "Switching protocols" }, ...errors(404, 426, 429) }
    }
  },
  "/api/v1/live": {
    get: {
      tags: ["live"],
      operationId: "liveOrganizationStream",
      summary: "Live organization stream (WebSocket)",
      description:
        "Authenticated WebSocket (header, or `access_token` query for browsers): the public events plus `heartbeat` and `observe.spike`.",
      parameters: [queryParam("access_token", "An API key, for browsers that cannot set headers")],
      responses: { "101": { description: "Switching protocols" }, ...errors(401, 426) }
    }
  },
  "/status/{slug}": {
    get: {
      tags: ["status"],
      operationId: "statusPage",
      summary: "Public status page (HTML)",
      description: "Server-rendered status page that updates live; every asset served by Canopy.",
      parameters: [slug],
      responses: { "200": text("text/html", "The page"), "404": text("text/html", "Unknown organization") }
    }
  }
}

/** The wildcard tail of the tree and blob routes, under a name generators can use. */
const TAIL = "refAndPath"

/**
 * Adds the raw routes, and turns the wildcard tail of the tree and blob routes (`/…/tree/*`,
 * parameter `*`) into a named parameter `{refAndPath}`: `*` is no identifier, and generators
 * choke on it.
 */
export const withRawRoutes = (spec: Record<string, any>): Record<string, any> => {
  const paths: Record<string, any> = {}
  for (const [path, item] of Object.entries<any>(spec.paths ?? {})) {
    if (!path.endsWith("/*")) {
      paths[path] = item
      continue
    }
    paths[`${path.slice(0, -1)}{${TAIL}}`] = Object.fromEntries(
      Object.entries<any>(item).map(([method, op]) => [
        method,
        {
          ...op,
          parameters: (op.parameters ?? []).map((parameter: any) =>
            parameter.name === "*"
              ? {
                ...parameter,
                name: TAIL,
                description:
                  "The ref (branch, tag or commit), then the path in it, joined by `/` (e.g. `main/src/app.ts`)"
              }
              : parameter
          )
        }
      ])
    )
  }
  return { ...spec, paths: { ...paths, ...(cleanNumbers(rawRoutePaths) as Record<string, unknown>) } }
}
