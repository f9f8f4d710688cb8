import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, Forbidden, NotFound } from "../../../schemas/Errors.ts"
import {
  AddMember,
  CreateApiKey,
  CreatedApiKey,
  CreateOrganization,
  Organization,
  Slug,
  UpdateOrganization,
  User
} from "../../../schemas/Tenancy.ts"
import { AdminAuthentication } from "./Security.ts"

const slugParams = { slug: Slug }

export const QuotaStatus = Schema.Struct({
  limit: Schema.Int,
  used: Schema.Int,
  remaining: Schema.Int,
  reset: Schema.Int,
  runner: Schema.String
})

/** Bootstrap and operations (GUIDE §3); the same operations are in `npm run cli`. */
export class AdminApi extends HttpApiGroup.make("admin").add(
  HttpApiEndpoint.get("listOrgs", "/orgs", {
    success: Schema.Struct({ orgs: Schema.Array(Organization), count: Schema.Int })
  }),
  HttpApiEndpoint.post("createOrg", "/orgs", {
    payload: CreateOrganization,
    success: Organization.annotate({ httpApiStatus: 201 }),
    error: Conflict
  }),
  HttpApiEndpoint.patch("updateOrg", "/orgs/:slug", {
    params: slugParams,
    payload: UpdateOrganization,
    success: Organization,
    error: NotFound
  }),
  HttpApiEndpoint.get("orgQuota", "/orgs/:slug/quota", {
    params: slugParams,
    success: QuotaStatus,
    error: NotFound
  }),
  HttpApiEndpoint.post("addUser", "/orgs/:slug/users", {
    params: slugParams,
    payload: AddMember,
    success: User.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict]
  }),
  HttpApiEndpoint.post("createKey", "/orgs/:slug/keys", {
    params: slugParams,
    payload: CreateApiKey,
    success: CreatedApiKey.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Forbidden]
  }),
  HttpApiEndpoint.delete("revokeKey", "/keys/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  })
).prefix("/api/v1/admin").middleware(AdminAuthentication) {}
