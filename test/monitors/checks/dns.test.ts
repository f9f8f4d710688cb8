import { describe, expect, it } from "@effect/vitest"
import dns2 from "dns2"
import { Effect } from "effect"
import * as Dgram from "node:dgram"
import type { CheckTarget } from "../../../services/monitors/checks/Checker.ts"
import { check, target } from "./harness.ts"

/** A DNS server on 127.0.0.1 (UDP) answering for a small zone, NXDOMAIN for anything else. */
const dnsServer = Effect.acquireRelease(
  Effect.gen(function*() {
    const { Packet } = dns2
    const zone: Record<string, Partial<Record<number, ReadonlyArray<Record<string, unknown>>>>> = {
      "up.canopy.test": {
        [Packet.TYPE.A]: [{ address: "10.1.2.3" }, { address: "10.1.2.4" }],
        [Packet.TYPE.AAAA]: [{ address: "2001:db8::10" }],
        [Packet.TYPE.MX]: [{ exchange: "mail.canopy.test", priority: 10 }],
        [Packet.TYPE.TXT]: [{ data: "v=spf1 -all" }],
        [Packet.TYPE.NS]: [{ ns: "ns1.canopy.test" }]
      },
      "www.canopy.test": { [Packet.TYPE.CNAME]: [{ domain: "up.canopy.test" }] },
      "empty.canopy.test": {}
    }
    const server = dns2.createServer({
      udp: true,
      handle: (request, send) => {
        const response = Packet.createResponseFromRequest(request)
        const [question] = request.questions
        const records = zone[question.name.toLowerCase()]
        if (records === undefined) {
          response.header.rcode = 3 // NXDOMAIN (Packet.RCODE is missing from dns2's types)
        } else {
          for (const record of records[question.type] ?? []) {
            // dns2's `Resource` type wants a `toBuffer` its encoder does not use.
            response.answers.push(
              {
                name: question.name,
                type: question.type,
                class: Packet.CLASS.IN,
                ttl: 60,
                ...record
              } as any
            )
          }
        }
        send(response)
      }
    })
    const addresses = yield* Effect.promise(() => server.listen({ udp: { port: 0, address: "127.0.0.1" } }))
    return { server, address: `127.0.0.1:${addresses.udp!.port}` }
  }),
  ({ server }) => Effect.promise(() => server.close())
)

describe("dns check", () => {
  const dns = (server: string, overrides: Partial<CheckTarget> & Pick<CheckTarget, "url">) =>
    check(target({ checkType: "dns", ...overrides }), { checker: { dnsServers: [server] } })

  it.live("a name with A records is up; expectedValue must be among them", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      const up = yield* dns(address, { url: "dns://up.canopy.test" })
      expect(up.status).toBe("up")
      expect(up.error).toBeUndefined()
      expect(yield* dns(address, { url: "dns://up.canopy.test", expectedValue: "10.1.2.4" })).toMatchObject({
        status: "up"
      })
      expect(yield* dns(address, { url: "dns://up.canopy.test", expectedValue: "10.9.9.9" })).toMatchObject({
        status: "down",
        error: "expected A record 10.9.9.9, not among the 2 answers"
      })
      // The resolver's answers are not echoed back to the tenant.
      const mismatch = yield* dns(address, { url: "dns://up.canopy.test", expectedValue: "10.9.9.9" })
      expect(mismatch.error).not.toContain("10.1.2.")
    }))

  it.live("NXDOMAIN is down", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      expect(yield* dns(address, { url: "dns://missing.canopy.test" })).toMatchObject({
        status: "down",
        error: "DNS lookup failed: ENOTFOUND (NXDOMAIN) for missing.canopy.test"
      })
    }))

  it.live("a name without records of the type is down", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      expect(yield* dns(address, { url: "dns://empty.canopy.test" })).toMatchObject({
        status: "down",
        error: "DNS lookup failed: ENODATA (no A records) for empty.canopy.test"
      })
    }))

  it.live("other record types, with expectedValue", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      const cases: ReadonlyArray<readonly [Partial<CheckTarget>, "up" | "down", string?]> = [
        [{ dnsRecordType: "AAAA", expectedValue: "2001:0db8:0:0::10" }, "up"],
        [
          { dnsRecordType: "AAAA", expectedValue: "2001:db8::11" },
          "down",
          "expected AAAA record 2001:db8::11, not among the 1 answer"
        ],
        [{ dnsRecordType: "MX", expectedValue: "mail.canopy.test" }, "up"],
        [{ dnsRecordType: "MX", expectedValue: "10 mail.canopy.test." }, "up"],
        [
          { dnsRecordType: "MX", expectedValue: "20 mail.canopy.test" },
          "down",
          "expected MX record 20 mail.canopy.test, not among the 1 answer"
        ],
        [{ dnsRecordType: "TXT", expectedValue: "v=spf1 -all" }, "up"],
        [
          { dnsRecordType: "TXT", expectedValue: "v=spf1 ~all" },
          "down",
          "expected TXT record v=spf1 ~all, not among the 1 answer"
        ],
        [{ dnsRecordType: "NS", expectedValue: "NS1.canopy.test" }, "up"],
        [{ url: "dns://www.canopy.test", dnsRecordType: "CNAME", expectedValue: "up.canopy.test" }, "up"],
        [
          { url: "dns://www.canopy.test", dnsRecordType: "CNAME", expectedValue: "down.canopy.test" },
          "down",
          "expected CNAME record down.canopy.test, not among the 1 answer"
        ]
      ]
      for (const [overrides, status, error] of cases) {
        const result = yield* dns(address, { url: "dns://up.canopy.test", ...overrides })
        expect({ ...overrides, status: result.status, error: result.error }).toEqual({ ...overrides, status, error })
      }
    }))

  it.live("a DNS server that never answers is down within the timeout", () =>
    Effect.gen(function*() {
      const socket = Dgram.createSocket("udp4")
      const port = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          socket.bind(0, "127.0.0.1", () => resume(Effect.succeed(socket.address().port)))
        }),
        () => Effect.sync(() => socket.close())
      )
      const result = yield* dns(`127.0.0.1:${port}`, { url: "dns://up.canopy.test", timeoutSeconds: 1 })
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^(timed out after 1s|DNS lookup failed: ETIMEOUT)/)
      expect(result.responseTimeMs).toBeLessThan(1500)
    }))
})
