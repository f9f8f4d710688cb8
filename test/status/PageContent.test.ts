import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { DailyUptime } from "../../services/monitors/Uptime.ts"
import { withOpenIntervals } from "../../services/monitors/Uptime.ts"
import { uptimeBars } from "../../services/status/UptimeBars.ts"
import { createIncident } from "../live/incidents.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

/**
 * What the status page shows beyond live updates: time-weighted day bars, maintenance
 * windows (validated, upcoming or in progress, never lowering the status), the history of
 * the past 90 days by day, and an icon of its own.
 */

const DAY = 86_400_000

it("a one-minute outage on a monitor's first day is a minute of the day, not one check of seven", () => {
  const now = Date.parse("2026-11-28T10:00:00.000Z")
  // Seven minutes of data: six up, one down (what counting checks made 85.71%).
  const daily = new Map<string, ReadonlyArray<DailyUptime>>([
    ["mon_new", [{ date: "2026-11-28", upMs: 6 * 60_000, downMs: 60_000 }]]
  ])
  const { days, uptime } = uptimeBars(["2026-11-27", "2026-11-28"], ["mon_new"], daily, now, "up")
  expect(days[0]).toEqual({ date: "2026-11-27", uptime: null, level: "none" })
  // One minute of the ten hours gone by today.
  expect(days[1].uptime).toBeCloseTo(100 * (1 - 1 / 600), 6)
  expect(days[1].level).toBe("minor")
  expect(uptime).toBeCloseTo(days[1].uptime!, 6)
  // A whole past day with the same minute is 99.93%, green.
  const past = uptimeBars(
    ["2026-11-27"],
    ["m"],
    new Map([["m", [{ date: "2026-11-27", upMs: 0, downMs: 60_000 }]]]),
    now,
    "up"
  )
  expect(past.days[0].uptime).toBeCloseTo(100 * (1 - 1 / 1440), 6)
  expect(past.days[0].level).toBe("good")
  // Down right now: today's bar is red even before any downtime is accounted.
  expect(uptimeBars(["2026-11-28"], ["m"], new Map(), now, "major_outage").days[0].level).toBe("major")
})

it("the open interval counts on the days it spans, in the monitor's current status", () => {
  const now = new Date("2026-11-28T01:00:00.000Z")
  const daily = withOpenIntervals(
    new Map([["m", [{ date: "2026-11-27", upMs: 1000, downMs: 0 }]]]),
    [{ id: "m", status: "down", statusSince: new Date(now.getTime() - 2 * 3_600_000) }],
    90,
    now
  )
  expect(daily.get("m")).toEqual([
    { date: "2026-11-27", upMs: 1000, downMs: 3_600_000 },
    { date: "2026-11-28", upMs: 0, downMs: 3_600_000 }
  ])
})

it.live("maintenance windows, incident history by day and the favicon", () =>
  Effect.gen(function*() {
    const app = yield* startApp()
    const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "content", plan: "enterprise" })
    const incidents = `${app.baseUrl}/api/v1/incidents`
    const post = (body: Record<string, unknown>) => request(incidents, { method: "POST", token: key, body })

    // Windows are validated: only on maintenance, a start, an end after it.
    const start = new Date(Date.now() + DAY)
    const end = new Date(start.getTime() + 3_600_000)
    for (
      const [body, path] of [
        [{ title: "x", severity: "minor", scheduledFor: start.toISOString() }, "body.scheduledFor"],
        [{ title: "x", severity: "maintenance", scheduledUntil: end.toISOString() }, "body.scheduledFor"],
        [{
          title: "x",
          severity: "maintenance",
          scheduledFor: end.toISOString(),
          scheduledUntil: start.toISOString()
        }, "body.scheduledUntil"],
        [{ title: "x", severity: "maintenance", scheduledFor: "tomorrow" }, "body.scheduledFor"]
      ] as const
    ) {
      const refused = yield* post(body)
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(refused.body.details.map((d: { path: string }) => d.path)).toContain(path)
    }
    const upcoming = yield* createIncident(app.baseUrl, key, {
      title: "Database upgrade",
      severity: "maintenance",
      scheduledFor: start.toISOString(),
      scheduledUntil: end.toISOString()
    })
    expect(upcoming).toMatchObject({ scheduledFor: start.toISOString(), scheduledUntil: end.toISOString() })
    const running = yield* createIncident(app.baseUrl, key, {
      title: "Network maintenance",
      severity: "maintenance",
      scheduledFor: new Date(Date.now() - 60_000).toISOString()
    })
    expect(running.scheduledUntil).toBeNull()

    // Two resolved incidents, one of them begun three days ago, one 100 days ago (beyond the history).
    const recent = yield* createIncident(app.baseUrl, key, { title: "Slow API", severity: "minor" })
    const older = yield* createIncident(app.baseUrl, key, { title: "Login errors", severity: "major" })
    const ancient = yield* createIncident(app.baseUrl, key, { title: "Ancient", severity: "minor" })
    for (const incident of [recent, older, ancient]) {
      const patched = yield* request(`${incidents}/${incident.id}`, {
        method: "PATCH",
        token: key,
        body: { status: "resolved", message: "Fixed." }
      })
      expect(patched.status).toBe(200)
    }
    yield* app.sql`UPDATE incidents SET created_at = now() - interval '3 days' WHERE id = ${older.id}`
    yield* app.sql`UPDATE incidents SET created_at = now() - interval '100 days' WHERE id = ${ancient.id}`

    const page = yield* request(`${app.baseUrl}/status/content`)
    expect(page.status).toBe(200)
    const html: string = page.body
    // Maintenance never lowers the status.
    expect(html).toContain(`data-overall="operational"`)
    const maintenance = html.slice(html.indexOf(`id="maintenance"`), html.indexOf(`id="past-incidents"`))
    expect(maintenance).toMatch(
      new RegExp(`data-incident-id="${upcoming.id}"[\\s\\S]*?data-maintenance-state="upcoming"`)
    )
    expect(maintenance).toMatch(
      new RegExp(`data-incident-id="${running.id}"[\\s\\S]*?data-maintenance-state="in_progress"`)
    )
    // The history: grouped by the day each began, newest day first, within 90 days.
    const history = html.slice(html.indexOf(`id="past-incidents"`))
    const today = new Date().toISOString().slice(0, 10)
    const threeDaysAgo = new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10)
    expect([...history.matchAll(/data-day="([0-9-]+)"/g)].map((m) => m[1])).toEqual([today, threeDaysAgo])
    expect(history).toContain(`data-severity="major"`)
    expect(history).not.toContain("Ancient")

    // An icon of its own: linked from the page, and at /favicon.ico (a 404 on every load before).
    expect(html).toContain(`<link rel="icon" href="/status-assets/favicon.svg"`)
    for (const path of ["/favicon.ico", "/status-assets/favicon.svg"]) {
      const icon = yield* request(`${app.baseUrl}${path}`)
      expect(icon.status, path).toBe(200)
      expect(icon.headers.get("content-type"), path).toBe("image/svg+xml")
      expect(String(icon.body), path).toContain("<svg")
    }
  }), { timeout: 120_000 })
