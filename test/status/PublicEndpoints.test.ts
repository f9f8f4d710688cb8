import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { accountInterval } from "../../services/monitors/Uptime.ts"
import { badgeColor, formatUptime } from "../../services/status/Badge.ts"
import { eventually } from "../support/wait.ts"
import { call, insertMonitor, newOrg, TestApp, TestAppLive } from "./fixtures.ts"
import { findAll, parseXml, readBadge, textOf } from "./svg.ts"

const HOUR = 3_600_000

/** A monitor with `upHours` then `downHours` of history ending an hour ago (`null`: no data at all). */
const monitorWithUptime = (orgId: string, upHours: number | null, downHours = 0) =>
  Effect.gen(function*() {
    const { sql } = yield* TestApp
    const id = yield* insertMonitor(orgId, { status: upHours === null ? "pending" : "up" })
    if (upHours === null) return id
    const end = Date.now() - HOUR
    const downFrom = end - downHours * HOUR
    yield* accountInterval(sql, {
      monitorId: id,
      from: new Date(downFrom - upHours * HOUR),
      to: new Date(downFrom),
      status: "up"
    })
    yield* accountInterval(sql, { monitorId: id, from: new Date(downFrom), to: new Date(end), status: "down" })
    yield* sql`UPDATE monitors SET status_since = now() WHERE id = ${id}`
    return id
  })

const badge = (slug: string, monitorId: string, query = "") =>
  Effect.map(call(`/api/v1/badge/${slug}/${monitorId}${query}`), (response) => ({
    ...response,
    svg: typeof response.body === "string" ? readBadge(response.body) : undefined
  }))

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Public status endpoints", (it) => {
  it.effect("the RSS feed is valid RSS 2.0 with escaped text, RFC 822 dates and incident guids", () =>
    Effect.gen(function*() {
      const { key, slug } = yield* newOrg("feed")
      const tricky = `Login <b>broken</b> & "slow" for 'some' \u0001users`
      const first = (yield* call("/api/v1/incidents", {
        method: "POST",
        token: key,
        body: { title: tricky, description: "Errors ]]> <script>alert(1)</script>" }
      })).body
      for (let i = 0; i < 50; i++) {
        yield* call("/api/v1/incidents", { method: "POST", token: key, body: { title: `Incident ${i}` } })
      }
      // Touching the first incident moves its pubDate, not its place (newest created first).
      yield* call(`/api/v1/incidents/${first.id}/updates`, {
        method: "POST",
        token: key,
        body: { message: "Fixed & verified", status: "resolved" }
      })
      const response = yield* call(`/api/v1/feed/${slug}`)
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^application\/rss\+xml/)
      expect(response.headers.get("cache-control")).toBe("public, max-age=300")
      expect(response.headers.get("x-ratelimit-limit")).toBe("600")

      const doc = parseXml(response.body)
      expect(doc.rss["@_version"]).toBe("2.0")
      const channel = doc.rss.channel
      expect(channel.title).toBe(`${slug.toUpperCase()} status`)
      expect(channel.link).toBe(`http://localhost/status/${slug}`)
      expect(typeof channel.description).toBe("string")
      const items = findAll(channel, "item")
      // The 50 newest: the first incident (the oldest of 51) is left out.
      expect(items).toHaveLength(50)
      expect(textOf(items[0].guid)).not.toBe(first.id)
      const listed = (yield* call("/api/v1/incidents?limit=50", { token: key })).body.incidents
      expect(items.map((item) => textOf(item.guid))).toEqual(listed.map((incident: any) => incident.id))
      for (const [i, item] of items.entries()) {
        expect(item.guid["@_isPermaLink"]).toBe("false")
        expect(item.pubDate).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/)
        expect(Date.parse(item.pubDate)).toBe(Math.floor(Date.parse(listed[i].updatedAt) / 1000) * 1000)
      }

      // The escaped incident, on an organization of its own so it is among the newest.
      const other = yield* newOrg("feed")
      const escaped = (yield* call("/api/v1/incidents", {
        method: "POST",
        token: other.key,
        body: { title: tricky, description: "Errors ]]> <script>alert(1)</script>" }
      })).body
      const feed = parseXml((yield* call(`/api/v1/feed/${other.slug}`)).body)
      const [item] = findAll(feed, "item")
      expect(textOf(item.guid)).toBe(escaped.id)
      // Text comes back as written, minus the control character XML cannot carry.
      expect(item.title).toContain(`Login <b>broken</b> & "slow" for 'some' users`)
      expect(item.description).toContain("Errors ]]> <script>alert(1)</script>")

      // A reader sending the ETag back gets a 304 until an incident changes.
      const fetched = yield* call(`/api/v1/feed/${other.slug}`)
      const etag = fetched.headers.get("etag")!
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/)
      expect(parseXml(fetched.body).rss.channel.lastBuildDate).toBe(new Date(escaped.updatedAt).toUTCString())
      const unchanged = yield* call(`/api/v1/feed/${other.slug}`, { headers: { "if-none-match": etag } })
      expect(unchanged.status).toBe(304)
      expect(unchanged.headers.get("etag")).toBe(etag)
      yield* call(`/api/v1/incidents/${escaped.id}`, {
        method: "PATCH",
        token: other.key,
        body: { message: "Rolling out a fix" }
      })
      // The incident event drops the runner's cached feed (within the outbox's wake-up).
      const changed = yield* eventually(
        "the changed feed",
        call(`/api/v1/feed/${other.slug}`, { headers: { "if-none-match": etag } }),
        (response) => response.status === 200,
        { timeoutMs: 5_000, pollMs: 20 }
      )
      expect(changed.headers.get("etag")).not.toBe(etag)

      const unknown = yield* call("/api/v1/feed/no-such-org")
      expect(unknown.status).toBe(404)
      expect(unknown.body.error).toBe("not_found")
    }))

  it.effect("the badge is drawn in each shields.io style with the label, uptime and colour", () =>
    Effect.gen(function*() {
      const { orgId, slug } = yield* newOrg("badge")
      const id = yield* monitorWithUptime(orgId, 199, 1) // 99.5 %
      const widths = new Map<string, number>()
      for (const style of ["flat", "flat-square", "plastic", "for-the-badge"]) {
        const response = yield* badge(slug, id, `?style=${style}`)
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toMatch(/^image\/svg\+xml/)
        const shown = style === "for-the-badge" ? ["UPTIME", "99.5%"] : ["uptime", "99.5%"]
        expect(response.svg!.texts).toEqual(expect.arrayContaining(shown))
        expect(response.svg!.fills).toContain("#97ca00")
        expect(response.svg!.root["@_aria-label"]).toBe(`${shown[0]}: 99.5%`)
        widths.set(style, response.svg!.width)
      }
      // Same text, shields.io geometry: flat styles share a width, for-the-badge is wider.
      expect(widths.get("flat")).toBe(widths.get("flat-square"))
      expect(widths.get("flat")).toBe(widths.get("plastic"))
      expect(widths.get("for-the-badge")).toBeGreaterThan(widths.get("flat")!)
      // The default style is flat.
      expect((yield* badge(slug, id)).svg!.width).toBe(widths.get("flat"))

      // A longer label is a wider badge (Verdana widths), and its text is escaped.
      const label = `<svg onload="x">&'`
      const labelled = yield* badge(slug, id, `?label=${encodeURIComponent(label)}`)
      expect(labelled.status).toBe(200)
      expect(labelled.svg!.texts).toContain(label)
      expect(labelled.body).not.toContain("<svg onload")
      expect(labelled.svg!.width).toBeGreaterThan(widths.get("flat")!)

      expect(badgeColor(100)).toBe("#4c1")
      expect(formatUptime(99.999)).toBe("99.99%")
    }))

  it.effect("colours follow the thresholds, period picks the window, no data is grey", () =>
    Effect.gen(function*() {
      const { orgId, slug } = yield* newOrg("badge")
      const cases: ReadonlyArray<readonly [number | null, number, string, string]> = [
        [100, 0, "#4c1", "100%"],
        [199, 1, "#97ca00", "99.5%"],
        [97, 3, "#dfb317", "97%"],
        [92, 8, "#fe7d37", "92%"],
        [10, 10, "#e05d44", "50%"],
        [null, 0, "#9f9f9f", "no data"]
      ]
      for (const [up, down, colour, text] of cases) {
        const id = yield* monitorWithUptime(orgId, up, down)
        const { svg } = yield* badge(slug, id)
        expect(svg!.fills, text).toContain(colour)
        expect(svg!.texts).toContain(text)
      }
      // Down for 8 hours a few days ago: the last 24 hours are clean, the week is not.
      const { sql } = yield* TestApp
      const id = yield* insertMonitor(orgId, { status: "up" })
      const now = Date.now()
      yield* accountInterval(sql, {
        monitorId: id,
        from: new Date(now - 100 * HOUR),
        to: new Date(now - 92 * HOUR),
        status: "down"
      })
      yield* accountInterval(sql, { monitorId: id, from: new Date(now - 92 * HOUR), to: new Date(now), status: "up" })
      yield* sql`UPDATE monitors SET status_since = now() WHERE id = ${id}`
      expect((yield* badge(slug, id, "?period=24h")).svg!.texts).toContain("100%")
      expect((yield* badge(slug, id, "?period=7d")).svg!.texts).toContain("92%")
      expect((yield* badge(slug, id, "?period=30d")).svg!.texts).toContain("92%")
    }))

  it.effect("bad queries are 400; an unknown monitor is a grey not-found badge with 404", () =>
    Effect.gen(function*() {
      const { orgId, slug } = yield* newOrg("badge")
      const stranger = yield* newOrg("badge")
      const id = yield* monitorWithUptime(orgId, 10)
      const foreign = yield* monitorWithUptime(stranger.orgId, 10)

      const badStyle = yield* badge(slug, id, "?style=rounded")
      expect(badStyle.status).toBe(400)
      expect(badStyle.body).toMatchObject({ error: "validation_error", details: [{ path: "query.style" }] })
      const badPeriod = yield* badge(slug, id, "?period=1y")
      expect(badPeriod.status).toBe(400)
      expect(badPeriod.body.details[0].path).toBe("query.period")
      expect((yield* badge(slug, id, `?label=${"x".repeat(101)}`)).status).toBe(400)

      for (const [org, monitor] of [[slug, "mon_missing"], [slug, foreign], ["no-such-org", id]] as const) {
        const missing = yield* badge(org, monitor, "?style=plastic&label=api")
        expect(missing.status).toBe(404)
        expect(missing.headers.get("content-type")).toMatch(/^image\/svg\+xml/)
        expect(missing.svg!.texts).toEqual(expect.arrayContaining(["api", "not found"]))
        expect(missing.svg!.fills).toContain("#9f9f9f")
      }
    }))

  it.effect("the widget answers with CORS, preflight included", () =>
    Effect.gen(function*() {
      const { key, orgId, slug } = yield* newOrg("widget")
      const checkedAt = new Date(Date.now() - 10 * 60_000)
      yield* insertMonitor(orgId, { status: "up", lastCheckedAt: checkedAt })
      yield* insertMonitor(orgId, { status: "down", lastCheckedAt: new Date(checkedAt.getTime() - 60_000) })

      const before = yield* call(`/api/v1/widget/${slug}`, { headers: { origin: "https://example.com" } })
      expect(before.status).toBe(200)
      expect(before.headers.get("access-control-allow-origin")).toBe("*")
      expect(before.headers.get("x-ratelimit-limit")).toBe("100")
      expect(before.body).toEqual({
        status: "partial_outage",
        uptime: expect.any(Number),
        monitors: 2,
        incidents: 0,
        lastUpdated: checkedAt.toISOString()
      })
      const incident = (yield* call("/api/v1/incidents", {
        method: "POST",
        token: key,
        body: { title: "Database failover", severity: "major" }
      })).body
      const after = (yield* eventually(
        "the widget after the incident",
        call(`/api/v1/widget/${slug}`),
        (response) => response.body.incidents === 1,
        { timeoutMs: 5_000, pollMs: 20 }
      )).body
      expect(after).toMatchObject({ status: "major_outage", incidents: 1, lastUpdated: incident.updatedAt })

      const preflight = yield* call(`/api/v1/widget/${slug}`, {
        method: "OPTIONS",
        headers: {
          origin: "https://example.com",
          "access-control-request-method": "GET",
          "access-control-request-headers": "content-type"
        }
      })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
      expect(preflight.headers.get("access-control-allow-methods")).toContain("GET")
      expect(preflight.headers.get("access-control-allow-headers")).toContain("content-type")

      const unknown = yield* call("/api/v1/widget/no-such-org", { headers: { origin: "https://example.com" } })
      expect(unknown.status).toBe(404)
      expect(unknown.body.error).toBe("not_found")
      expect(unknown.headers.get("access-control-allow-origin")).toBe("*")
    }))
})
