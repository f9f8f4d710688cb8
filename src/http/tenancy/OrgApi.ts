import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { ApiKeySummary } from "../../../schemas/tenancy/Tenancy.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "./Security.ts"

/** Self-service for organization admins: the organization's keys (scope `org:admin`). */
export class OrgApi extends HttpApiGroup.make("org").add(
  HttpApiEndpoint.get("listKeys", "/api/v1/org/keys", {
    success: Schema.Struct({ keys: Schema.Array(ApiKeySummary), count: Schema.Int })
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs(
      "List the organization's keys",
      "Every API key of the organization, newest first, without secrets. Scope `org:admin`."
    )
  ),
  HttpApiEndpoint.delete("revokeKey", "/api/v1/org/keys/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "org:admin").annotateMerge(
    docs(
      "Revoke a key",
      "Revokes one of the organization's keys; it answers 401 at once on every runner. Scope `org:admin`."
    )
  )
).middleware(Authentication) {}
