import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

export const Plan = Schema.Literals(["free", "hobby", "pro", "enterprise"])
export type Plan = typeof Plan.Type

export const Role = Schema.Literals(["owner", "admin", "member"])
export type Role = typeof Role.Type

export const allScopes = [
  "monitors:read",
  "monitors:write",
  "incidents:read",
  "incidents:write",
  "status:read",
  "observe:ingest",
  "observe:read",
  "code:read",
  "code:write",
  "code:admin",
  "org:admin"
] as const
export const ApiScope = Schema.Literals(allScopes)
export type ApiScope = typeof ApiScope.Type

/** Scopes a role may hold: members lack `code:admin` and `org:admin` (GUIDE §3). */
export const scopesForRole = (role: Role): ReadonlyArray<ApiScope> =>
  role === "member" ? allScopes.filter((scope) => scope !== "code:admin" && scope !== "org:admin") : allScopes

export const Slug = Schema.String.check(
  Schema.isPattern(/^[a-z0-9-]{2,40}$/, { message: "must be 2-40 characters of a-z, 0-9 and -" })
)
export const Username = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,38}$/, {
    message: "must be 1-39 characters of letters, digits, _, . and -"
  })
)
export const Email = Schema.String.check(
  Schema.isPattern(/^[^\s@]+@[^\s@]+$/, { message: "must be an email address" }),
  Schema.isMaxLength(254)
)
const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))

export const Organization = Schema.Struct({
  id: Schema.String,
  slug: Schema.String,
  name: Schema.String,
  plan: Plan,
  projectId: Schema.Int,
  requestsPerMinute: Schema.Int,
  /** Storage of packs + LFS the organization may use: the plan's, or the admin API's override. */
  storageLimitBytes: Schema.Number,
  /**
   * The logo shown on the public status page (served by Canopy at `/status/{slug}/logo`
   * from its own copy), and why the last fetch of it failed (null: the copy is current).
   * Absent where the organization is embedded in another answer (`/me`).
   */
  logoUrl: Schema.optional(Schema.NullOr(Schema.String)),
  logoError: Schema.optional(Schema.NullOr(Schema.String)),
  createdAt: Schema.String
})
export type Organization = typeof Organization.Type

export const User = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  role: Schema.optional(Role),
  createdAt: Schema.String
})
export type User = typeof User.Type

export const CreateOrganization = Schema.Struct({
  slug: Slug,
  name: Name,
  plan: Schema.optional(Plan),
  requestsPerMinute: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100_000_000 })))
}).annotate({ examples: [{ slug: "acme", name: "Acme Inc", plan: "pro" }] })
export type CreateOrganization = typeof CreateOrganization.Type

export const UpdateOrganization = Schema.Struct({
  name: Schema.optional(Name),
  plan: Schema.optional(Plan),
  /** Per-organization override of the plan's request quota (enterprise contracts); null restores the plan's. */
  requestsPerMinute: Schema.optional(
    Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100_000_000 })))
  ),
  /** Per-organization storage in bytes (Enterprise's "100 GB+"); null restores the plan's. */
  storageLimitBytes: Schema.optional(
    Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })))
  ),
  /**
   * An https URL of the organization's logo (png, jpeg, gif, webp or svg, up to 512 KiB);
   * Canopy fetches it now and serves its own copy. Null removes the logo.
   */
  logoUrl: Schema.optional(Schema.NullOr(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048))))
})
export type UpdateOrganization = typeof UpdateOrganization.Type

export const AddMember = Schema.Struct({
  username: Username,
  email: Email,
  name: Schema.optional(Name),
  role: Schema.optional(Role)
}).annotate({ examples: [{ username: "alice", email: "alice@example.com", name: "Alice", role: "owner" }] })
export type AddMember = typeof AddMember.Type

export const CreateApiKey = Schema.Struct({
  username: Username,
  name: Schema.optional(Name),
  scopes: Schema.optional(Schema.Array(ApiScope))
}).annotate({ examples: [{ username: "alice", name: "laptop" }, { username: "ci", scopes: ["monitors:read"] }] })
export type CreateApiKey = typeof CreateApiKey.Type

export const CreatedApiKey = Schema.Struct({
  id: Schema.String,
  key: Schema.String,
  name: Schema.String,
  scopes: Schema.Array(ApiScope),
  username: Schema.String,
  org: Schema.String,
  createdAt: Schema.String
})
export type CreatedApiKey = typeof CreatedApiKey.Type

export const ApiKeySummary = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scopes: Schema.Array(ApiScope),
  username: Schema.String,
  createdAt: Schema.String,
  lastUsedAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String)
})
export type ApiKeySummary = typeof ApiKeySummary.Type

export const Me = Schema.Struct({
  user: User,
  org: Organization,
  scopes: Schema.Array(ApiScope),
  /** `https://<key>@<host>/<org-slug>` for `X-Service-DSN` (GUIDE §7). */
  dsn: Schema.optional(Schema.String),
  /** `https://<key>@<host>/<projectId>` for Sentry SDKs (GUIDE §7). */
  sentryDsn: Schema.optional(Schema.String)
})
export type Me = typeof Me.Type

// --- domain events ---------------------------------------------------------------------

/** An API key was revoked: every runner drops its cached lookup at once. */
export const ApiKeyRevokedEvent = eventType("apikey.revoked", Schema.Struct({ keyId: Schema.String }))

/** An organization's name, plan or quota changed: cached lookups of its keys are dropped. */
export const OrgUpdatedEvent = eventType("org.updated", Schema.Struct({ slug: Schema.String }))
