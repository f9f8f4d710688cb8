import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { NotFound } from "../../../schemas/Errors.ts"
import { ApiKeySummary } from "../../../schemas/Tenancy.ts"
import { Authentication, RequiredScope } from "./Security.ts"

/** Self-service for organization admins: the organization's keys (scope `org:admin`). */
export class OrgApi extends HttpApiGroup.make("org").add(
  HttpApiEndpoint.get("listKeys", "/api/v1/org/keys", {
    success: Schema.Struct({ keys: Schema.Array(ApiKeySummary), count: Schema.Int })
  }).annotate(RequiredScope, "org:admin"),
  HttpApiEndpoint.delete("revokeKey", "/api/v1/org/keys/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "org:admin")
).middleware(Authentication) {}
