import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, NotFound, ValidationError } from "../../../schemas/Errors.ts"
import {
  CreateOrgWebhook,
  DeliveryDetail,
  DeliveryList,
  DeliveryQueued,
  ListDeliveriesQuery,
  PlanRequired,
  UpdateOrgWebhook,
  Webhook,
  WebhookList
} from "../../../schemas/Webhooks.ts"
import { docs } from "./OpenApiDocs.ts"
import { Authentication, RequiredScope } from "./Security.ts"

const idParams = { id: Schema.String }
const deliveryParams = { id: Schema.String, deliveryId: Schema.String }

/** Organization webhooks (GUIDE §13): monitor, incident and observe events. Scope `org:admin`. */
export class WebhooksApi extends HttpApiGroup.make("webhooks").add(
  HttpApiEndpoint.get("list", "/", { success: WebhookList }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs(
      "List organization webhooks",
      "Newest first, each with `deliveryCount`, `failureCount` and `lastDeliveryAt` from its log. Scope `org:admin`."
    )
  ),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateOrgWebhook,
    success: Webhook.annotate({ httpApiStatus: 201 }),
    error: [ValidationError, PlanRequired]
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs(
      "Create an organization webhook",
      "Subscribes an https URL to `monitor.*`, `incident.*` and `observe.*` events (or `*`). The secret is " +
        "write-only. Free and Hobby allow 3 per organization, Pro 20 (403 `plan_required` above). Scope `org:admin`."
    )
  ),
  HttpApiEndpoint.get("get", "/:id", { params: idParams, success: Webhook, error: NotFound }).annotate(
    RequiredScope,
    "org:admin"
  ).annotateMerge(docs("Read an organization webhook", "Its settings and delivery counts. Scope `org:admin`.")),
  HttpApiEndpoint.patch("update", "/:id", {
    params: idParams,
    payload: UpdateOrgWebhook,
    success: Webhook,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs(
      "Update an organization webhook",
      "Any subset of its settings; `isActive: true` re-enables a disabled webhook, `secret: null` removes the " +
        "secret. Scope `org:admin`."
    )
  ),
  HttpApiEndpoint.delete("remove", "/:id", { params: idParams, success: HttpApiSchema.NoContent, error: NotFound })
    .annotate(RequiredScope, "org:admin").annotateMerge(
      docs("Delete an organization webhook", "Removes it with its delivery log. Scope `org:admin`.")
    ),
  HttpApiEndpoint.post("test", "/:id/test", {
    params: idParams,
    success: DeliveryQueued.annotate({ httpApiStatus: 202 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs("Send a ping", "Queues a `ping` delivery (202), whatever the subscription. Scope `org:admin`.")
  ),
  HttpApiEndpoint.get("deliveries", "/:id/deliveries", {
    params: idParams,
    query: ListDeliveriesQuery,
    success: DeliveryList,
    error: NotFound
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs("List deliveries", "The webhook's delivery log, newest first, filtered by `status`. Scope `org:admin`.")
  ),
  HttpApiEndpoint.get("delivery", "/:id/deliveries/:deliveryId", {
    params: deliveryParams,
    success: DeliveryDetail,
    error: NotFound
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs(
      "Read a delivery",
      "The payload and every attempt with request and response headers and bodies (first 64 KiB). Scope `org:admin`."
    )
  ),
  HttpApiEndpoint.post("redeliver", "/:id/deliveries/:deliveryId/redeliver", {
    params: deliveryParams,
    success: DeliveryQueued.annotate({ httpApiStatus: 202 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs("Redeliver", "Queues a new delivery of the same payload with `redelivery: true` (202). Scope `org:admin`.")
  )
).prefix("/api/v1/webhooks").middleware(Authentication) {}
