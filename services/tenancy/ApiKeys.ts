import { Clock, Context, Effect, Layer, Option, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { Forbidden, NotFound, Unauthorized } from "../../schemas/platform/Errors.ts"
import {
  ApiKeyRevokedEvent,
  type ApiKeySummary,
  ApiScope,
  type CreateApiKey,
  type CreatedApiKey,
  type Organization,
  OrgUpdatedEvent,
  Role,
  scopesForRole,
  type User
} from "../../schemas/tenancy/Tenancy.ts"
import { Events, publish } from "../events/Events.ts"
import { sha256Hex } from "../platform/Crypto.ts"
import { makeId, randomBase62 } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import { insertApiKey, keySummaries, principalByHash, recordLastUsed, revokeApiKey } from "./ApiKeyRows.ts"
import { toOrganization } from "./OrganizationRows.ts"
import { Tenancy } from "./Tenancy.ts"
import { toUser } from "./UserRows.ts"

/** Who is calling: the key, its organization and user, and what it may do. */
export interface Principal {
  readonly keyId: string
  readonly org: Organization
  readonly user: User
  readonly role: Role
  readonly scopes: ReadonlyArray<ApiScope>
}

/** Secrets look like `cnp_<40 base62>`: only `[A-Za-z0-9_]`, as Sentry DSN keys require. */
const secretPrefix = "cnp_"
const secretPattern = /^cnp_[A-Za-z0-9]{40}$/

/** Keys are stored as SHA-256 of the secret; the secret itself is shown once and never kept. */
const hashSecret = sha256Hex

/** How long a runner trusts a cached key lookup; revocations and plan changes evict at once. */
const cacheTtlMillis = 30_000
/**
 * Keys a runner keeps looked up; beyond this the oldest lookup is dropped (insertion order,
 * so a hit costs nothing). Effect's `Cache` was measured on this path and cost about a third
 * of /api/v1/me's throughput (docs/decisions.md).
 */
const cacheCapacity = 10_000

export class ApiKeys extends Context.Service<ApiKeys, {
  create(orgSlug: string, input: CreateApiKey): Effect.Effect<CreatedApiKey, NotFound | Forbidden>
  list(orgId: string): Effect.Effect<ReadonlyArray<ApiKeySummary>>
  /** Revokes a key; with `orgId`, only one of that organization's (another's answers 404). */
  revoke(keyId: string, options?: { readonly orgId?: string }): Effect.Effect<{ readonly orgId: string }, NotFound>
  authenticate(secret: string): Effect.Effect<Principal, Unauthorized>
  /** Forget cached lookups of one key or of every key of one organization (after a change elsewhere). */
  evict(target: { readonly keyId?: string; readonly orgId?: string }): Effect.Effect<void>
}>()("canopy/tenancy/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tenancy = yield* Tenancy
      // Keyed by the secret's hash, so no plaintext key outlives its request in this process.
      const cache = new Map<string, { readonly principal: Principal; readonly expiresAt: number }>()
      const lastUsed = new Map<string, number>()

      const create = Effect.fn("ApiKeys.create")(function*(orgSlug: string, input: CreateApiKey) {
        const org = yield* tenancy.findOrganization(orgSlug)
        const member = yield* tenancy.findMember(org.id, input.username)
        if (member._tag === "None") {
          return yield* new NotFound({ message: `User '${input.username}' is not a member of '${orgSlug}'` })
        }
        const allowed = scopesForRole(member.value.role ?? "member")
        const scopes = input.scopes === undefined || input.scopes.length === 0 ? allowed : [...new Set(input.scopes)]
        const denied = scopes.filter((scope) => !allowed.includes(scope))
        if (denied.length > 0) {
          return yield* new Forbidden({
            message: `Role '${member.value.role}' cannot hold scopes: ${denied.join(", ")}`
          })
        }
        const secret = secretPrefix + randomBase62(40)
        const id = makeId("key")
        const name = input.name ?? "default"
        const rows = yield* insertApiKey(sql, {
          id,
          orgId: org.id,
          userId: member.value.id,
          name,
          secretHash: hashSecret(secret),
          scopes
        }).pipe(Effect.orDie)
        return {
          id,
          key: secret,
          name,
          scopes,
          username: member.value.username,
          org: org.slug,
          createdAt: rows[0].created_at.toISOString()
        }
      })

      const evict = (target: { readonly keyId?: string; readonly orgId?: string }) =>
        Effect.sync(() => {
          for (const [hash, entry] of cache) {
            if (entry.principal.keyId === target.keyId || entry.principal.org.id === target.orgId) {
              cache.delete(hash)
            }
          }
        })

      const list = Effect.fn("ApiKeys.list")(function*(orgId: string) {
        const rows = yield* keySummaries(sql, orgId).pipe(Effect.orDie)
        return rows.map((row): ApiKeySummary => ({
          id: row.id,
          name: row.name,
          scopes: row.scopes,
          username: row.username,
          createdAt: row.created_at.toISOString(),
          lastUsedAt: row.last_used_at?.toISOString() ?? null,
          revokedAt: row.revoked_at?.toISOString() ?? null
        }))
      })

      const revoke = Effect.fn("ApiKeys.revoke")(function*(keyId: string, options?: { readonly orgId?: string }) {
        const rows = yield* inTransaction(
          sql,
          Effect.gen(function*() {
            const rows = yield* revokeApiKey(sql, keyId, options?.orgId)
            // Other runners drop their cached lookup of this key when the event arrives.
            if (rows.length > 0) yield* publish(ApiKeyRevokedEvent.make(rows[0].org_id, { keyId }))
            return rows
          })
        )
        if (rows.length === 0) return yield* new NotFound({ message: `API key '${keyId}' not found` })
        yield* evict({ keyId })
        return { orgId: rows[0].org_id }
      })

      const lookup = (hash: string) =>
        principalByHash(sql, hash).pipe(
          Effect.orDie,
          Effect.map(Option.map((row): Principal => ({
            keyId: row.key_id,
            role: row.role,
            // A demoted member loses the scopes its new role does not allow.
            scopes: row.scopes.filter((scope) => scopesForRole(row.role).includes(scope)),
            org: toOrganization({
              id: row.id,
              slug: row.slug,
              name: row.org_name,
              plan: row.plan,
              project_id: row.project_id,
              requests_per_minute: row.requests_per_minute,
              storage_limit_bytes: row.storage_limit_bytes,
              created_at: row.org_created_at
            }),
            user: toUser({
              id: row.user_id,
              username: row.username,
              email: row.email,
              name: row.user_name,
              created_at: row.user_created_at
            })
          })))
        )

      const unauthorized = new Unauthorized({ message: "Missing, malformed, unknown or revoked API key" })

      // The hot path of every authenticated request: no generator, one clock read, and the
      // database only on a cache miss.
      const authenticate = (secret: string): Effect.Effect<Principal, Unauthorized> => {
        if (!secretPattern.test(secret)) return Effect.fail(unauthorized)
        const hash = hashSecret(secret)
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const cached = cache.get(hash)
          if (cached !== undefined && cached.expiresAt > now) {
            lastUsed.set(cached.principal.keyId, now)
            return Effect.succeed(cached.principal)
          }
          return Effect.flatMap(lookup(hash), (found) => {
            if (Option.isNone(found)) return Effect.fail(unauthorized)
            if (cache.size >= cacheCapacity) cache.delete(cache.keys().next().value!)
            cache.set(hash, { principal: found.value, expiresAt: now + cacheTtlMillis })
            lastUsed.set(found.value.keyId, now)
            return Effect.succeed(found.value)
          })
        })
      }

      // `lastUsedAt` is written in batches so authentication stays off the write path.
      const flushLastUsed = Effect.gen(function*() {
        if (lastUsed.size === 0) return
        const entries = [...lastUsed]
        lastUsed.clear()
        const ids = entries.map(([id]) => id)
        const times = entries.map(([, at]) => new Date(at).toISOString())
        yield* recordLastUsed(sql, ids, times).pipe(Effect.orDie)
      })
      yield* flushLastUsed.pipe(
        Effect.catchCause((cause) => Effect.logWarning("lastUsedAt flush failed", cause)),
        Effect.repeat(Schedule.spaced("2 seconds")),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => Effect.ignore(flushLastUsed))

      // Revocations and plan changes made on any runner evict this runner's cached lookups;
      // if this runner fell behind the event stream it forgets everything instead.
      const events = yield* Events
      yield* events.live.pipe(
        Stream.runForEach((event) => {
          const revoked = ApiKeyRevokedEvent.match(event)
          if (Option.isSome(revoked)) return evict({ keyId: revoked.value.keyId })
          if (Option.isSome(OrgUpdatedEvent.match(event)) && event.orgId !== null) return evict({ orgId: event.orgId })
          return Effect.void
        }),
        Effect.catchCause(() => Effect.sync(() => cache.clear())),
        Effect.forever,
        Effect.forkScoped
      )

      return ApiKeys.of({ create, list, revoke, authenticate, evict })
    })
  )
}
