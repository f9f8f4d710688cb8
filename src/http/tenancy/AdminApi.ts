import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, Forbidden, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import {
  AddMember,
  CreateApiKey,
  CreatedApiKey,
  CreateOrganization,
  Organization,
  Slug,
  UpdateOrganization,
  User
} from "../../../schemas/tenancy/Tenancy.ts"
import { docs } from "../platform/OpenApiDocs.ts"
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
  }).annotateMerge(docs("List organizations", "Every organization with its plan. Admin token.")),
  HttpApiEndpoint.post("createOrg", "/orgs", {
    payload: CreateOrganization,
    success: Organization.annotate({ httpApiStatus: 201 }),
    error: Conflict
  }).annotateMerge(
    docs("Create an organization", "A new organization (`plan` defaults to free); a taken slug is a 409. Admin token.")
  ),
  HttpApiEndpoint.patch("updateOrg", "/orgs/:slug", {
    params: slugParams,
    payload: UpdateOrganization,
    success: Organization,
    error: [NotFound, ValidationError]
  }).annotateMerge(
    docs(
      "Update an organization",
      "Name, plan, a per-organization request quota or the status page's logo; takes effect at once. " +
        "A `logoUrl` is fetched now (through the outbound guard; an image up to 512 KiB) and served by Canopy " +
        "at `/status/{slug}/logo`; if that fails the answer's `logoError` says why. Admin token."
    )
  ),
  HttpApiEndpoint.get("orgQuota", "/orgs/:slug/quota", {
    params: slugParams,
    success: QuotaStatus,
    error: NotFound
  }).annotateMerge(
    docs("Read a request quota", "The organization's current rate window as its entity sees it. Admin token.")
  ),
  HttpApiEndpoint.post("addUser", "/orgs/:slug/users", {
    params: slugParams,
    payload: AddMember,
    success: User.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict]
  }).annotateMerge(
    docs("Add a user", "Creates the user if new and adds the membership with a role (default member). Admin token.")
  ),
  HttpApiEndpoint.post("createKey", "/orgs/:slug/keys", {
    params: slugParams,
    payload: CreateApiKey,
    success: CreatedApiKey.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Forbidden]
  }).annotateMerge(
    docs(
      "Create an API key",
      "A key for a member; the secret is in this response only. Without scopes it gets all its role allows. Admin token."
    )
  ),
  HttpApiEndpoint.delete("revokeKey", "/keys/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotateMerge(docs("Revoke any key", "Revokes a key of any organization; it answers 401 at once. Admin token."))
).prefix("/api/v1/admin").middleware(AdminAuthentication) {}
