import { Cause, Context, Deferred, Effect, Layer, Scope, Stream } from "effect"
import { createHash } from "node:crypto"
import type { NotFound } from "../../schemas/platform/Errors.ts"
import { ComponentChangedEvent } from "../../schemas/status/Components.ts"
import { OrgUpdatedEvent } from "../../schemas/tenancy/Tenancy.ts"
import { type DomainEvent, Events } from "../events/Events.ts"
import type { OrganizationName } from "../tenancy/Tenancy.ts"
import { StatusSummary } from "./StatusSummary.ts"

/**
 * The per-runner cache of the public status surface's rendered bytes (summary, widget,
 * feed, badge, HTML page), so that an outage's crowd of visitors costs no query per
 * request. An entry belongs to one organization and is dropped by every domain event that
 * changes what it shows (monitor status, monitor or component edits, incidents). Each
 * runner drops the entries on the event's commit hint (`CommitHints.ts`), which arrives with
 * the NOTIFY of the commit, and again when `Events.live` delivers the event itself (the
 * ordered read waits for every older open transaction, and not every publisher sends hints).
 *
 * Uptime figures and `lastUpdated` move without an event, so an entry also ages: after
 * `freshMs` the next request still gets it at once while one background computation
 * replaces it (stale-while-revalidate inside the runner, as a CDN would do in front).
 * Concurrent misses share one computation; a computation that an invalidating event
 * overtook is handed to its waiters but not kept.
 */

/** One rendered answer: its status, bytes, media type and strong ETag. */
export interface Rendered {
  readonly status: number
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
}

/** A strong ETag of the bytes (the bytes are the representation: no encoding varies them). */
export const strongEtag = (body: Uint8Array): string =>
  `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`

export const rendered = (body: string | Uint8Array, contentType: string, status = 200): Rendered => {
  const bytes = typeof body === "string" ? Buffer.from(body) : body
  return { status, body: bytes, contentType, etag: strongEtag(bytes) }
}

/** Domain events after which an organization's public status may read differently. */
export const STATUS_EVENTS: ReadonlySet<string> = new Set([
  "monitor.status",
  "monitor.changed",
  "incident.created",
  "incident.updated",
  "incident.resolved",
  "incident.deleted",
  ComponentChangedEvent.type,
  // Name and logo (and plan, quota: harmless).
  OrgUpdatedEvent.type
])

export interface StatusCacheOptions {
  /** How long an entry is served without a refresh (default 5 s). */
  readonly freshMs?: number | undefined
  /** How long past that a stale entry may still be served while it refreshes (default 60 s). */
  readonly staleMs?: number | undefined
  /** Organizations kept at most (default 20,000): the oldest organization's entries are dropped first. */
  readonly maxOrganizations?: number | undefined
  /** Rendered bytes kept at most (default 64 MiB): the oldest organizations' entries are dropped first. */
  readonly maxBytes?: number | undefined
}

const MAX_KEYS_PER_ORG = 500

interface Entry<A> {
  readonly generation: number
  readonly at: number
  readonly value: Deferred.Deferred<A, unknown>
  settled: A | undefined
  refreshing: boolean
}

export class StatusCache extends Context.Service<StatusCache, {
  /**
   * The cached `key` of organization `orgId`, computing it with `compute` on a miss (one
   * computation for every concurrent caller). Failures are not kept.
   */
  get<E, R>(orgId: string, key: string, compute: Effect.Effect<Rendered, E, R>): Effect.Effect<Rendered, E, R>
  /**
   * The cached `key` of the organization behind `slug`, synchronously, when `get` would answer
   * it at once without starting work: fresh, or stale with its refresh under way. Undefined
   * when anything is missing, computing, stale with no refresh, or invalidated (then `get`).
   */
  peek(slug: string, key: string): Rendered | undefined
  /** The organization behind a public slug, cached like the renderings. */
  organization(slug: string): Effect.Effect<OrganizationName, NotFound>
  /**
   * Drops an organization's entries and the cached organizations behind slugs (what an
   * `org.updated` event does): for a writer whose change must show on this runner at once.
   */
  invalidate(orgId: string): Effect.Effect<void>
}>()("canopy/status/StatusCache") {
  static readonly layerWith = (options: StatusCacheOptions = {}) =>
    Layer.effect(
      StatusCache,
      Effect.gen(function*() {
        const events = yield* Events
        const summaries = yield* StatusSummary
        const scope = yield* Effect.scope
        const freshMs = options.freshMs ?? 5_000
        const staleMs = options.staleMs ?? 60_000
        const maxOrganizations = options.maxOrganizations ?? 20_000
        const maxBytes = options.maxBytes ?? 64 * 1024 * 1024
        /** Bytes held per organization and key, and in all. */
        const sizes = new Map<string, Map<string, number>>()
        let totalBytes = 0
        const forgetOrg = (orgId: string) => {
          for (const size of sizes.get(orgId)?.values() ?? []) totalBytes -= size
          sizes.delete(orgId)
          byOrg.delete(orgId)
        }
        const forgetKey = (orgId: string, key: string) => {
          const orgSizes = sizes.get(orgId)
          totalBytes -= orgSizes?.get(key) ?? 0
          orgSizes?.delete(key)
        }
        const account = (orgId: string, key: string, bytes: number) => {
          if (!byOrg.has(orgId)) return
          let orgSizes = sizes.get(orgId)
          if (orgSizes === undefined) sizes.set(orgId, orgSizes = new Map())
          totalBytes += bytes - (orgSizes.get(key) ?? 0)
          orgSizes.set(key, bytes)
          while (totalBytes > maxBytes && byOrg.size > 1) forgetOrg(byOrg.keys().next().value!)
        }

        const byOrg = new Map<string, Map<string, Entry<unknown>>>()
        const generations = new Map<string, number>()
        const orgs = new Map<string, Entry<OrganizationName>>()

        const invalidateNow = (orgId: string) => {
          generations.set(orgId, (generations.get(orgId) ?? 0) + 1)
          forgetOrg(orgId)
        }
        const clearAll = () => {
          for (const orgId of byOrg.keys()) generations.set(orgId, (generations.get(orgId) ?? 0) + 1)
          byOrg.clear()
          sizes.clear()
          totalBytes = 0
          orgs.clear()
        }

        const lookup = <A, E, R>(
          table: Map<string, Entry<unknown>>,
          key: string,
          generation: () => number,
          compute: Effect.Effect<A, E, R>
        ): Effect.Effect<A, E, R> =>
          Effect.suspend(() => {
            const now = Date.now()
            const entry = table.get(key) as Entry<A> | undefined
            if (entry !== undefined && entry.generation === generation()) {
              const age = now - entry.at
              if (age < freshMs || entry.settled === undefined) {
                return Deferred.await(entry.value) as Effect.Effect<A, E>
              }
              if (age < freshMs + staleMs) {
                if (!entry.refreshing) {
                  entry.refreshing = true
                  return Effect.as(Effect.forkIn(start(table, key, generation, compute, true), scope), entry.settled)
                }
                return Effect.succeed(entry.settled)
              }
            }
            return start(table, key, generation, compute)
          })

        const start = <A, E, R>(
          table: Map<string, Entry<unknown>>,
          key: string,
          generation: () => number,
          compute: Effect.Effect<A, E, R>,
          background = false
        ): Effect.Effect<A, E, R> =>
          Effect.suspend(() => {
            const value = Deferred.makeUnsafe<A, unknown>()
            const previous = table.get(key) as Entry<A> | undefined
            const entry: Entry<A> = {
              generation: generation(),
              at: Date.now(),
              value,
              settled: undefined,
              refreshing: false
            }
            // A background refresh leaves the stale entry in place until its result is ready.
            if (!background) table.set(key, entry as Entry<unknown>)
            return compute.pipe(
              Effect.onExit((exit) =>
                Effect.sync(() => {
                  Deferred.doneUnsafe(value, exit)
                  const current = table.get(key)
                  if (exit._tag === "Success" && entry.generation === generation()) {
                    entry.settled = exit.value
                    table.set(key, entry as Entry<unknown>)
                  } else if (current === entry || current === previous) {
                    table.delete(key)
                  }
                })
              )
            )
          })

        const get = <E, R>(orgId: string, key: string, compute: Effect.Effect<Rendered, E, R>) =>
          Effect.suspend(() => {
            let table = byOrg.get(orgId)
            if (table === undefined) {
              if (byOrg.size >= maxOrganizations) forgetOrg(byOrg.keys().next().value!)
              byOrg.set(orgId, table = new Map())
            } else if (table.size >= MAX_KEYS_PER_ORG && !table.has(key)) {
              // Badge labels are the caller's: bound what one organization can hold.
              const oldest = table.keys().next().value!
              table.delete(oldest)
              forgetKey(orgId, oldest)
            }
            const counted = Effect.tap(compute, (entry) => Effect.sync(() => account(orgId, key, entry.body.length)))
            return lookup(table, key, () => generations.get(orgId) ?? 0, counted)
          })

        const organization = (slug: string) =>
          Effect.suspend(() => {
            if (orgs.size >= maxOrganizations) orgs.delete(orgs.keys().next().value!)
            return lookup(orgs as Map<string, Entry<unknown>>, slug, () => 0, summaries.organization(slug))
          })

        const onEvent = (event: Pick<DomainEvent, "type" | "orgId">) => {
          if (event.orgId !== null && STATUS_EVENTS.has(event.type)) invalidateNow(event.orgId)
          // The organization's own name (and logo) are cached with its slug.
          if (event.type === OrgUpdatedEvent.type) orgs.clear()
        }

        // The fast path: a commit hint drops the entries as soon as the commit is announced.
        yield* events.hints.pipe(
          Stream.runForEach((hint) => Effect.sync(() => onEvent(hint))),
          Effect.forkIn(scope)
        )
        yield* events.live.pipe(
          Stream.runForEach((event) => Effect.sync(() => onEvent(event))),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              // Events were lost: nothing cached can be trusted any more.
              : Effect.sync(clearAll)
          ),
          Effect.forever,
          Effect.forkIn(scope)
        )
        yield* Scope.addFinalizer(scope, Effect.sync(clearAll))

        /**
         * What `lookup` answers at once without starting anything: a fresh entry, or a stale
         * one whose background refresh is already under way (a slow refresh under load would
         * otherwise send every request of its window to the Effect app).
         */
        const servable = <A>(entry: Entry<A> | undefined, now: number): boolean =>
          entry?.settled !== undefined &&
          (now - entry.at < freshMs || (entry.refreshing && now - entry.at < freshMs + staleMs))

        const peek = (slug: string, key: string): Rendered | undefined => {
          const now = Date.now()
          const org = orgs.get(slug)
          if (org === undefined || !servable(org, now)) return undefined
          const orgId = org.settled!.id
          const entry = byOrg.get(orgId)?.get(key)
          if (entry === undefined || !servable(entry, now)) return undefined
          return entry.generation === (generations.get(orgId) ?? 0) ? entry.settled as Rendered : undefined
        }

        return StatusCache.of({
          get,
          peek,
          organization,
          invalidate: (orgId) => Effect.sync(() => onEvent({ type: OrgUpdatedEvent.type, orgId }))
        })
      })
    )

  static readonly layer = StatusCache.layerWith()
}
