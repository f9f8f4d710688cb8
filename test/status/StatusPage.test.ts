import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createIncident, patchIncident } from "../live/incidents.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"
import { artifactPath, launchChromium } from "./browser.ts"

/**
 * The public status page in a real browser (Debian's chromium via playwright-core): it
 * renders the monitors with their 90-day bars and an incident, and applies a new incident
 * from the live stream without reloading.
 */

/** Monitors as the scheduler leaves them, with 90 days of hourly rollups (a few bad days). */
const arrangeMonitors = (sql: SqlClient.SqlClient, orgId: string) =>
  Effect.gen(function*() {
    const monitors = [
      ["mon_web", "Website", "up"],
      ["mon_api", "Public API", "up"],
      ["mon_db", "Database cluster", "degraded"]
    ] as const
    for (const [id, name, status] of monitors) {
      yield* sql`
        INSERT INTO monitors (id, org_id, name, url, status, next_check_at)
        VALUES (${id}, ${orgId}, ${name}, 'http://127.0.0.1:9/', ${status}, now() + interval '1 hour')`
      // One row per day at noon: 24 h of uptime, minus some downtime on a few days.
      yield* sql`
        INSERT INTO monitor_uptime_hourly (monitor_id, hour, up_ms, down_ms, checks)
        SELECT ${id}, date_trunc('day', now()) - d * interval '1 day' + interval '12 hours',
          86400000 - dm, dm, 1440
        FROM generate_series(1, 89) AS d,
          LATERAL (SELECT CASE
            WHEN ${id} = 'mon_api' AND d IN (12, 47) THEN 3600000
            WHEN ${id} = 'mon_db' AND d = 5 THEN 600000
            WHEN ${id} = 'mon_web' AND d = 30 THEN 60000
            ELSE 0 END AS dm) AS x`
    }
  }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)

describe("public status page", () => {
  it.live("renders components and incidents, updates live and subscribes in Chromium", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "acme" })
      yield* request(`${app.baseUrl}/api/v1/admin/orgs/acme`, {
        token: adminToken,
        method: "PATCH",
        body: { name: "Acme Cloud" }
      })
      yield* arrangeMonitors(app.sql, org.id)
      // One ongoing incident with two updates, and one from the past.
      const ongoing = yield* createIncident(app.baseUrl, key, {
        title: "Slow dashboard loading",
        message: "Some dashboards load slowly; we are looking into it.",
        affectedMonitors: ["mon_db"]
      })
      yield* patchIncident(app.baseUrl, key, ongoing.id, {
        status: "identified",
        message: "A slow database query is the cause; a fix is being rolled out."
      })
      const past = yield* createIncident(app.baseUrl, key, { title: "API errors in eu-west", severity: "major" })
      yield* patchIncident(app.baseUrl, key, past.id, {
        status: "resolved",
        message: "Error rates are back to normal."
      })

      const unknown = yield* request(`${app.baseUrl}/status/nobody`)
      expect(unknown.status).toBe(404)
      // Without components, every active monitor is a row of its own.
      const byMonitor = yield* request(`${app.baseUrl}/status/acme`)
      expect(byMonitor.body).toContain(`data-monitor-id="mon_api"`)
      expect(byMonitor.body).toContain("Public API")

      // The page's rows are the components.
      const components = []
      for (
        const [name, monitorIds, position] of [
          ["Website and API", ["mon_web", "mon_api"], 0],
          ["Database cluster", ["mon_db"], 1]
        ] as const
      ) {
        const created = yield* request(`${app.baseUrl}/api/v1/components`, {
          token: key,
          method: "POST",
          body: { name, monitorIds, position }
        })
        expect(created.status).toBe(201)
        components.push(created.body.id as string)
      }
      const [webId, dbId] = components

      const browser = yield* launchChromium()
      const page = yield* Effect.promise(() => browser.newPage())
      const response = yield* Effect.promise(() => page.goto(`${app.baseUrl}/status/acme`))
      expect(response?.status()).toBe(200)
      expect(response?.headers()["content-type"]).toContain("text/html")

      yield* Effect.promise(async () => {
        expect(await page.title()).toBe("Acme Cloud Status")
        expect(await page.textContent("#overall [data-overall-text]")).toBe("Degraded Performance")
        expect(await page.locator(".row-name").allTextContents()).toEqual(["Website and API", "Database cluster"])
        const web = page.locator(`[data-component-id=${webId}]`)
        expect(await web.locator(".bar").count()).toBe(90)
        // The API's two hours of downtime show on its component's bars (1 h of 48 h a day).
        expect(await web.locator(".bar.partial").count()).toBe(2)
        expect(await web.locator("[data-status]").textContent()).toBe("Operational")
        const db = page.locator(`[data-component-id=${dbId}]`)
        expect(await db.locator("[data-status]").textContent()).toBe("Degraded Performance")
        // Day 5's ten minutes, and today: the component is degraded right now.
        expect(await db.locator(".bar.minor").count()).toBe(2)
        expect(await db.locator(".bar").last().getAttribute("class")).toContain("minor")
        // Server-rendered incidents: the ongoing one with its timeline (newest first), the past one below.
        const ongoingCard = page.locator(`#active-incidents [data-incident-id=${ongoing.id}]`)
        expect(await ongoingCard.locator("h3").textContent()).toBe("Slow dashboard loading")
        expect(await ongoingCard.locator(".timeline li").allTextContents()).toEqual([
          expect.stringContaining("Identified - A slow database query is the cause"),
          expect.stringContaining("Investigating - Some dashboards load slowly")
        ])
        expect(await page.locator(`#past-incidents [data-incident-id=${past.id}] h3`).textContent()).toBe(
          "API errors in eu-west"
        )
        // Every asset comes from Canopy itself.
        // (Browser-side code is passed as strings: the project compiles without DOM types.)
        const sources: Array<string> = await page.evaluate(
          `[...document.querySelectorAll("script[src], link[href]")].map((el) => el.src || el.href)`
        )
        expect(sources.length).toBeGreaterThanOrEqual(4)
        for (const source of sources) expect(source.startsWith(app.baseUrl)).toBe(true)
        // The ALTCHA widget script loaded and registered its element.
        await page.waitForFunction(`customElements.get("altcha-widget") !== undefined`)
        // The live stream is connected (its snapshot arrived).
        await page.waitForFunction(`Number(document.body.dataset.liveEvents ?? 0) >= 1`, undefined, {
          timeout: 30_000
        })
        await page.evaluate(`window.notReloaded = true`)
      })

      // An incident is created: it appears without a reload.
      const created = yield* createIncident(app.baseUrl, key, {
        title: "Delayed e-mail delivery",
        message: "We are investigating delays of outgoing e-mail."
      })
      yield* Effect.promise(async () => {
        const card = page.locator(`#active-incidents [data-incident-id=${created.id}]`)
        await card.waitFor({ timeout: 30_000 })
        expect(await card.locator("h3").textContent()).toBe("Delayed e-mail delivery")
        expect(await card.locator(".timeline li").first().textContent()).toContain("Investigating")
        expect(await page.evaluate(`window.notReloaded`)).toBe(true)
        await page.screenshot({ path: artifactPath("status-page.png"), fullPage: true })
      })

      // A visitor subscribes: the ALTCHA widget solves the server's challenge in the browser.
      yield* Effect.promise(async () => {
        await page.click(".subscribe-toggle")
        await page.fill("#subscribe-email", "visitor@example.com")
        await page.waitForFunction(`document.querySelector("input[name=altcha]")?.value`, undefined, {
          timeout: 60_000
        })
        await page.click("#subscribe-form button[type=submit]")
        // The answer, once the form is no longer pending (it says "Subscribing…" meanwhile).
        await page.waitForFunction(`(() => {
          const message = document.getElementById("subscribe-message")
          return message.textContent !== "" && !message.classList.contains("pending")
        })()`)
        expect(await page.textContent("#subscribe-message")).toContain("Check your inbox")
        await page.screenshot({ path: artifactPath("status-page-subscribe.png") })
      })
      const pending = yield* app.sql<{ email: string }>`SELECT email FROM subscribers WHERE confirmed_at IS NULL`
      expect(pending).toEqual([{ email: "visitor@example.com" }])

      // A major incident turns the banner red, and resolving one moves it to the history, live.
      yield* createIncident(app.baseUrl, key, { title: "Checkout unavailable", severity: "major" })
      yield* patchIncident(app.baseUrl, key, ongoing.id, { status: "resolved", message: "Fixed." })
      yield* Effect.promise(async () => {
        await page.waitForFunction(`document.getElementById("overall").dataset.overall === "major_outage"`)
        expect(await page.textContent("#overall [data-overall-text]")).toBe("Major System Outage")
        await page.locator(`#past-incidents [data-incident-id=${ongoing.id}]`).waitFor()
        expect(await page.locator(`#active-incidents [data-incident-id=${ongoing.id}]`).count()).toBe(0)
        expect(await page.evaluate(`window.notReloaded`)).toBe(true)
      })

      // The same page on a phone.
      const phone = yield* launchChromium({ width: 390, height: 844 })
      const mobile = yield* Effect.promise(() => phone.newPage())
      yield* Effect.promise(async () => {
        await mobile.goto(`${app.baseUrl}/status/acme`)
        await mobile.locator(".row-name").first().waitFor()
        const overflow = await mobile.evaluate(`document.documentElement.scrollWidth > window.innerWidth`)
        expect(overflow).toBe(false)
        await mobile.screenshot({ path: artifactPath("status-page-phone.png"), fullPage: true })
      })
    }).pipe(Effect.scoped), 120_000)
})
