import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { publish } from "../../services/events/Events.ts"
import { createIncident } from "../live/incidents.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { artifactPath, launchChromium } from "./browser.ts"

/**
 * What a visitor sees change on the status page without reloading it, in Chromium: a
 * monitor going down turns its row and today's bar red, an incident card shows its severity
 * and components, a maintenance window appears as upcoming; and the subscribe form keeps a
 * click made while the proof of work is still computing, then takes a second address.
 */

/** What the check recorder does when a monitor turns down: the row, then `monitor.status`. */
const monitorGoesDown = (sql: SqlClient.SqlClient, orgId: string, monitorId: string) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`UPDATE monitors SET status = 'down', status_since = now() - interval '2 minutes' WHERE id = ${monitorId}`
    yield* publish(MonitorStatusEvent.make(orgId, {
      monitorId,
      name: "Website",
      status: "down",
      previousStatus: "up",
      timestamp: new Date().toISOString()
    }))
  })).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)

describe("public status page, live", () => {
  it.live(
    "a status change, an incident and a maintenance window appear without reload; subscribe waits for the proof",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp()
        const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "live-page" })
        // A monitor with two days of clean history, up since an hour ago.
        yield* app.sql`
        INSERT INTO monitors (id, org_id, name, url, status, next_check_at, status_since)
        VALUES ('mon_site', ${org.id}, 'Website', 'http://127.0.0.1:9/', 'up', now() + interval '1 hour',
                now() - interval '1 hour')`
        yield* app.sql`
        INSERT INTO monitor_uptime_hourly (monitor_id, hour, up_ms, down_ms, checks)
        SELECT 'mon_site', date_trunc('day', now()) - d * interval '1 day' + interval '12 hours', 86400000, 0, 1440
        FROM generate_series(1, 2) AS d`
        const component = yield* request(`${app.baseUrl}/api/v1/components`, {
          token: key,
          method: "POST",
          body: { name: "Web frontend", monitorIds: ["mon_site"] }
        })
        expect(component.status).toBe(201)
        const componentId = component.body.id as string

        const browser = yield* launchChromium()
        const page = yield* Effect.promise(() => browser.newPage())
        yield* Effect.promise(async () => {
          await page.goto(`${app.baseUrl}/status/live-page`)
          await page.waitForFunction(`Number(document.body.dataset.liveEvents ?? 0) >= 1`, undefined, {
            timeout: 30_000
          })
          await page.evaluate(`window.notReloaded = true`)
          const row = page.locator(`[data-component-id=${componentId}]`)
          expect(await row.locator("[data-status]").textContent()).toBe("Operational")
          expect(await row.locator(".bar").last().getAttribute("class")).toContain("good")
          expect(await row.locator(".row-foot").textContent()).toContain("100.00% uptime")
        })

        // The monitor goes down: the label, today's bar and the figure change without a reload.
        yield* monitorGoesDown(app.sql, org.id, "mon_site")
        yield* Effect.promise(async () => {
          const row = page.locator(`[data-component-id=${componentId}]`)
          await page.waitForFunction(
            `document.querySelector('[data-component-id="${componentId}"] .bar:last-child')?.classList.contains("major")`,
            undefined,
            { timeout: 30_000 }
          )
          expect(await row.locator("[data-status]").textContent()).toBe("Major Outage")
          expect(await row.locator(".row-foot").textContent()).not.toContain("100.00%")
          expect(await page.evaluate(`document.getElementById("overall").dataset.overall`)).toBe("major_outage")
        })

        // An incident: its card shows the severity and the component it affects.
        const incident = yield* createIncident(app.baseUrl, key, {
          title: "Website unreachable",
          severity: "major",
          affectedMonitors: ["mon_site"]
        })
        // A maintenance window tomorrow: upcoming, and the status it shows is not lowered by it.
        const start = new Date(Date.now() + 86_400_000)
        const maintenance = yield* createIncident(app.baseUrl, key, {
          title: "Database upgrade",
          severity: "maintenance",
          scheduledFor: start.toISOString(),
          scheduledUntil: new Date(start.getTime() + 3_600_000).toISOString(),
          affectedMonitors: ["mon_site"]
        })
        yield* Effect.promise(async () => {
          const card = page.locator(`#active-incidents [data-incident-id=${incident.id}]`)
          await card.waitFor({ timeout: 30_000 })
          expect(await card.locator("[data-severity]").textContent()).toBe("Major")
          expect(await card.locator("[data-affects]").textContent()).toBe("Web frontend")
          const window = page.locator(`#maintenance [data-incident-id=${maintenance.id}]`)
          await window.waitFor({ timeout: 30_000 })
          expect(await window.locator("[data-maintenance-state]").textContent()).toBe("Upcoming")
          expect(await window.locator("[data-severity]").textContent()).toBe("Maintenance")
          expect(await page.locator(`#active-incidents [data-incident-id=${maintenance.id}]`).count()).toBe(0)
          expect(await page.evaluate(`window.notReloaded`)).toBe(true)
          await page.screenshot({ path: artifactPath("status-page-live.png"), fullPage: true })
        })

        // Subscribe: the challenge is slowed down, so the click surely comes while the proof is computing.
        yield* Effect.promise(async () => {
          await page.route("**/api/v1/subscribe/challenge", async (route) => {
            await new Promise((resolve) => setTimeout(resolve, 1500))
            await route.continue()
          })
          await page.click(".subscribe-toggle")
          await page.fill("#subscribe-email", "first@example.com")
          await page.click("#subscribe-form button[type=submit]")
          // The form says it is verifying, and sends by itself once the proof is ready.
          const shown: any = await page.evaluate(
            `({ state: document.getElementById("subscribe-form").dataset.state, message: document.getElementById("subscribe-message").textContent })`
          )
          expect(shown.state).toBe("verifying")
          expect(shown.message).toContain("Verifying")
          await page.waitForFunction(
            `document.getElementById("subscribe-message").textContent.includes("inbox")`,
            undefined,
            {
              timeout: 60_000
            }
          )
          // A second address, no reload: a fresh proof is computed for it.
          await page.fill("#subscribe-email", "second@example.com")
          await page.click("#subscribe-form button[type=submit]")
          await page.waitForFunction(
            `document.getElementById("subscribe-form").dataset.state === "done" && document.getElementById("subscribe-email").value === ""`,
            undefined,
            { timeout: 60_000 }
          )
          expect(await page.textContent("#subscribe-message")).toContain("inbox")
          expect(await page.evaluate(`window.notReloaded`)).toBe(true)
        })
        const pending = yield* app.sql<{ email: string }>`
        SELECT email FROM subscribers WHERE confirmed_at IS NULL ORDER BY email`
        expect(pending).toEqual([{ email: "first@example.com" }, { email: "second@example.com" }])
      }).pipe(Effect.scoped),
    180_000
  )
})
