import { describe, expect, it } from "@effect/vitest"
import { renderStatusPage } from "../../src/http/status/renderStatusPage.ts"

const hostile = `<img src=x onerror=alert(1)></script>"'&`

describe("renderStatusPage", () => {
  it("escapes every organization-controlled text", () => {
    const html = renderStatusPage({
      slug: "evil",
      orgName: hostile,
      summary: {
        overallStatus: "operational",
        monitors: { total: 1, operational: 1, degraded: 0, down: 0 },
        activeIncidents: 1,
        uptime: { day: 100, week: 100, month: 100 },
        components: []
      },
      rows: [{ kind: "monitor", id: `mon_"x`, name: hostile, status: "up", days: [], uptime: null }],
      activeIncidents: [{
        id: "inc_1",
        title: hostile,
        status: "investigating",
        severity: "minor",
        updates: [{ id: "upd_1", status: "investigating", message: hostile, createdAt: "2026-11-23T10:00:00.000Z" }]
      }],
      pastIncidents: []
    })
    expect(html).not.toContain("<img")
    expect(html).not.toContain(`"'&<`)
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&quot;&#39;&amp;")
    expect(html).toContain(`data-monitor-id="mon_&quot;x"`)
    // The only script elements are the page's own.
    expect(html.match(/<script/g)).toHaveLength(3)
    expect(html.match(/<\/script>/g)).toHaveLength(3)
  })
})
