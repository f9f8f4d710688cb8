import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import type { ApiScope } from "../../../schemas/tenancy/Tenancy.ts"
import {
  CreateOrgWebhook,
  CreateRepoWebhook,
  DeliveryDetail,
  DeliveryList,
  DeliveryQueued,
  ListDeliveriesQuery,
  PlanRequired,
  UpdateOrgWebhook,
  UpdateRepoWebhook,
  Webhook,
  WebhookList
} from "../../../schemas/webhooks/Webhooks.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

/** What differs between organization and repository webhooks; the endpoints are the same. */
interface WebhookGroupOptions<Name extends string, Owner extends Schema.Struct.Fields, Create, Update> {
  readonly name: Name
  /** Path parameters naming the owner (none for the organization, `org` and `repo` for a repository). */
  readonly owner: Owner
  readonly create: Create
  readonly update: Update
  readonly scope: ApiScope
  /** "organization" or "repository", in the docs. */
  readonly noun: string
  readonly createDescription: string
}

const webhookGroup = <
  const Name extends string,
  const Owner extends Schema.Struct.Fields,
  Create extends Schema.Top,
  Update extends Schema.Top
>(options: WebhookGroupOptions<Name, Owner, Create, Update>) => {
  const { noun, owner, scope } = options
  const idParams = { ...owner, id: Schema.String }
  const deliveryParams = { ...idParams, deliveryId: Schema.String }
  const scoped = (text: string) => `${text} Scope \`${scope}\`.`
  return HttpApiGroup.make(options.name).add(
    HttpApiEndpoint.get("list", "/", { params: owner, success: WebhookList, error: NotFound }).annotate(
      RequiredScope,
      scope
    ).annotateMerge(
      docs(
        `List ${noun} webhooks`,
        scoped("Newest first, each with `deliveryCount`, `failureCount` and `lastDeliveryAt` from its log.")
      )
    ),
    HttpApiEndpoint.post("create", "/", {
      params: owner,
      payload: options.create,
      success: Webhook.annotate({ httpApiStatus: 201 }),
      error: [NotFound, ValidationError, PlanRequired]
    }).annotate(RequiredScope, scope).annotateMerge(
      docs(`Create ${noun === "organization" ? "an" : "a"} ${noun} webhook`, scoped(options.createDescription))
    ),
    HttpApiEndpoint.get("get", "/:id", { params: idParams, success: Webhook, error: NotFound }).annotate(
      RequiredScope,
      scope
    ).annotateMerge(
      docs(`Read ${noun === "organization" ? "an" : "a"} ${noun} webhook`, scoped("Its settings and delivery counts."))
    ),
    HttpApiEndpoint.patch("update", "/:id", {
      params: idParams,
      payload: options.update,
      success: Webhook,
      error: [NotFound, ValidationError]
    }).annotate(RequiredScope, scope).annotateMerge(
      docs(
        `Update ${noun === "organization" ? "an" : "a"} ${noun} webhook`,
        scoped(
          "Any subset of its settings; `isActive: true` re-enables a disabled webhook, `secret: null` removes the secret."
        )
      )
    ),
    HttpApiEndpoint.delete("remove", "/:id", { params: idParams, success: HttpApiSchema.NoContent, error: NotFound })
      .annotate(RequiredScope, scope).annotateMerge(
        docs(
          `Delete ${noun === "organization" ? "an" : "a"} ${noun} webhook`,
          scoped("Removes it with its delivery log.")
        )
      ),
    HttpApiEndpoint.post("test", "/:id/test", {
      params: idParams,
      success: DeliveryQueued.annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict]
    }).annotate(RequiredScope, scope).annotateMerge(
      docs("Send a ping", scoped("Queues a `ping` delivery (202), whatever the subscription."))
    ),
    HttpApiEndpoint.get("deliveries", "/:id/deliveries", {
      params: idParams,
      query: ListDeliveriesQuery,
      success: DeliveryList,
      error: NotFound
    }).annotate(RequiredScope, scope).annotateMerge(
      docs("List deliveries", scoped("The webhook's delivery log, newest first, filtered by `status`."))
    ),
    HttpApiEndpoint.get("delivery", "/:id/deliveries/:deliveryId", {
      params: deliveryParams,
      success: DeliveryDetail,
      error: NotFound
    }).annotate(RequiredScope, scope).annotateMerge(
      docs(
        "Read a delivery",
        scoped("The payload and every attempt with request and response headers and bodies (first 64 KiB).")
      )
    ),
    HttpApiEndpoint.post("redeliver", "/:id/deliveries/:deliveryId/redeliver", {
      params: deliveryParams,
      success: DeliveryQueued.annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict]
    }).annotate(RequiredScope, scope).annotateMerge(
      docs("Redeliver", scoped("Queues a new delivery of the same payload with `redelivery: true` (202)."))
    )
  ).middleware(Authentication)
}

/** Organization webhooks (GUIDE §13): monitor, incident and observe events. Scope `org:admin`. */
export class WebhooksApi extends webhookGroup({
  name: "webhooks",
  owner: {},
  create: CreateOrgWebhook,
  update: UpdateOrgWebhook,
  scope: "org:admin",
  noun: "organization",
  createDescription: "Subscribes an https URL to `monitor.*`, `incident.*` and `observe.*` events (or `*`). The " +
    "secret is write-only. Free and Hobby allow 3 per organization, Pro 20 (403 `plan_required` above)."
}).prefix("/api/v1/webhooks") {}

/**
 * Repository webhooks (spec 001 "Webhooks"): push, create, delete and the other repository
 * events. Scope `code:admin`; `{org}` must be the key's organization, any other answers 404.
 */
export class RepoWebhooksApi extends webhookGroup({
  name: "repoWebhooks",
  owner: { org: Schema.String, repo: Schema.String },
  create: CreateRepoWebhook,
  update: UpdateRepoWebhook,
  scope: "code:admin",
  noun: "repository",
  createDescription: "Subscribes an https URL to repository events (`push`, `create`, `delete`, … or `*`). The " +
    "secret is write-only. Free and Hobby allow 3 per repository, Pro 20 (403 `plan_required` above)."
}).prefix("/api/v1/code/repos/:org/:repo/webhooks") {}
