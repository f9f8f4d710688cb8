import { describe, expect, it } from "@effect/vitest"
import { dsnsFor } from "../../src/http/observe/Dsn.ts"
import { EnvelopeError, fromSentryItem, parseEnvelope } from "../../src/http/observe/SentryProtocol.ts"

const encode = (text: string) => new TextEncoder().encode(text)

describe("Sentry protocol", () => {
  it("parses envelopes with length-prefixed and newline-terminated items, ignoring other item types", () => {
    const event = JSON.stringify({ event_id: "e1", message: "héllo\nworld" })
    const envelope = [
      JSON.stringify({ event_id: "e1", sent_at: "2026-11-23T10:00:00.000Z" }),
      JSON.stringify({ type: "event", length: new TextEncoder().encode(event).length }),
      event,
      JSON.stringify({ type: "session" }),
      JSON.stringify({ started: "x" }),
      JSON.stringify({ type: "transaction" }),
      JSON.stringify({
        type: "transaction",
        transaction: "GET /",
        contexts: { trace: { trace_id: "t", span_id: "s" } }
      })
    ].join("\n")
    const parsed = parseEnvelope(encode(envelope))
    expect(parsed.header.event_id).toBe("e1")
    expect(parsed.items.map((item) => item.type)).toEqual(["event", "transaction"])
    expect((parsed.items[0].payload as any).message).toBe("héllo\nworld")
    expect(() => parseEnvelope(encode("{not json"))).toThrow(EnvelopeError)
  })

  it("maps an error event: last exception value, seconds to milliseconds, tag pairs, breadcrumbs", () => {
    const [mapped] = fromSentryItem({
      type: "event",
      payload: {
        event_id: "abc",
        timestamp: 1795425578.5,
        level: "fatal",
        tags: [["browser", "Firefox"], ["region", "eu"]],
        breadcrumbs: { values: [{ timestamp: 1795425570, category: "ui.click", message: "button" }] },
        exception: {
          values: [
            { type: "CauseError", value: "root cause" },
            {
              type: "TypeError",
              value: "x is undefined",
              stacktrace: { frames: [{ filename: "app.js", function: "f", lineno: 3 }] }
            }
          ]
        }
      }
    }) as Array<any>
    expect(mapped).toMatchObject({
      event_id: "abc",
      level: "fatal",
      message: "TypeError: x is undefined",
      timestamp: 1795425578500,
      tags: { browser: "Firefox", region: "eu" },
      breadcrumbs: [{ timestamp: 1795425570000, category: "ui.click", message: "button" }],
      exception: { type: "TypeError", stacktrace: { frames: [{ filename: "app.js", function: "f", lineno: 3 }] } }
    })
  })

  it("maps a transaction to its root span and child spans", () => {
    const spans = fromSentryItem({
      type: "transaction",
      payload: {
        type: "transaction",
        transaction: "GET /checkout",
        release: "1.0",
        start_timestamp: 100,
        timestamp: 100.25,
        contexts: { trace: { trace_id: "t1", span_id: "root", status: "ok" } },
        spans: [{
          span_id: "c1",
          parent_span_id: "root",
          description: "SELECT",
          start_timestamp: 100.1,
          timestamp: 100.15,
          status: "internal_error"
        }]
      }
    }) as Array<any>
    expect(spans.map((span) => span.span)).toEqual([
      { traceId: "t1", spanId: "root", parentId: undefined, name: "GET /checkout", durationMs: 250, status: "ok" },
      {
        traceId: "t1",
        spanId: "c1",
        parentId: "root",
        name: "SELECT",
        durationMs: expect.closeTo(50, 5),
        status: "error"
      }
    ])
    expect(spans.every((span) => span.level === "span" && span.release === "1.0")).toBe(true)
  })

  it("builds both DSNs from BASE_URL (keeping a path prefix), none without an absolute BASE_URL", () => {
    const org = { slug: "acme", projectId: 7 }
    expect(dsnsFor("https://canopy.example.com/errors/", "cnp_k", org)).toEqual({
      dsn: "https://cnp_k@canopy.example.com/errors/acme",
      sentryDsn: "https://cnp_k@canopy.example.com/errors/7"
    })
    expect(dsnsFor("/", "cnp_k", org)).toEqual({})
  })
})
