import { expect, it } from "@effect/vitest"
import { Context, Deferred, Effect } from "effect"
import { rendered, StatusCache } from "../../services/status/StatusCache.ts"
import { bootstrapOrg, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * What the raw fast path may serve (`StatusCache.peek`): a fresh entry, and a stale one only
 * while its background refresh is under way (what the routes answer then too), so a slow
 * refresh does not send its whole window of requests to the Effect app; never a stale entry
 * nobody refreshes (the app must see a request to start the refresh).
 */
it.live("peek serves a stale entry only while its refresh is under way", () =>
  Effect.gen(function*() {
    const app = yield* startApp()
    yield* bootstrapOrg(app.baseUrl, { slug: "stale" })
    const cache = Context.get(app.context as Context.Context<StatusCache>, StatusCache)
    const org = yield* cache.organization("stale")
    const first = rendered("first", "text/plain")
    yield* cache.get(org.id, "k", Effect.succeed(first))
    expect(cache.peek("stale", "k")).toBe(first)

    // Past its freshness (5 s) with no refresh: the fast path must fall through.
    yield* eventually("the entry to go stale", Effect.sync(() => cache.peek("stale", "k")), (v) => v === undefined, {
      timeoutMs: 30_000
    })

    // A request through the routes answers the stale bytes and starts the refresh (held here).
    const gate = yield* Deferred.make<void>()
    const second = rendered("second", "text/plain")
    yield* cache.organization("stale")
    expect(yield* cache.get(org.id, "k", Effect.as(Deferred.await(gate), second))).toBe(first)
    expect(cache.peek("stale", "k")).toBe(first)

    // Once the refresh is done, the new bytes.
    yield* Deferred.succeed(gate, undefined)
    yield* eventually("the refreshed entry", Effect.sync(() => cache.peek("stale", "k")), (v) => v === second)
  }), { timeout: 120_000 })
