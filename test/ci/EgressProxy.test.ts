import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decideEgress, startEgressProxy } from "../../services/ci/EgressProxy.ts"

/**
 * The egress proxy's decisions, offline: a public name (resolved by a stub to a public
 * address) is tunnelled to a local stand-in server; every non-public or host address is
 * refused before any connection is made.
 */
const PUBLIC = "93.184.216.34"
const names: Record<string, ReadonlyArray<string>> = {
  "registry.example": [PUBLIC],
  "rebind.example": [PUBLIC, "10.1.2.3"],
  "metadata.example": ["169.254.169.254"],
  "loopback.example": ["127.0.0.1"]
}
const resolve = async (host: string) => {
  const found = names[host]
  if (found === undefined) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" })
  return found
}

let dir: string
let standIn: Net.Server
let standInPort: number
let proxy: { close: () => Promise<void> }
const connected: Array<string> = []

/** Sends `head` (and `payload` once the proxy answered) and returns everything it answers until it closes. */
const ask = (head: string, payload?: string) =>
  new Promise<string>((resolveText) => {
    const socket = Net.connect(Path.join(dir, "proxy.sock"))
    let text = ""
    socket.on("connect", () => socket.write(head))
    socket.on("data", (chunk) => {
      const first = text === ""
      text += chunk.toString()
      if (first && payload !== undefined) socket.write(payload)
    })
    socket.on("error", () => undefined)
    socket.on("close", () => resolveText(text))
  })

beforeAll(async () => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-egress-"))
  // The stand-in for a public server: echoes what it gets, or answers one HTTP request.
  standIn = Net.createServer((socket) => {
    socket.once("data", (chunk) => {
      const text = chunk.toString()
      if (text.startsWith("GET ")) {
        const line = text.split("\r\n")[0]
        socket.end(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nstand-in saw: ${line}`)
      } else socket.end(`echo:${text}`)
    })
  })
  await new Promise<void>((done) => standIn.listen(0, "127.0.0.1", done))
  standInPort = (standIn.address() as Net.AddressInfo).port
  proxy = await startEgressProxy(Path.join(dir, "proxy.sock"), {
    resolve,
    connect: (address, port) => {
      connected.push(`${address}:${port}`)
      // Only the public address is ever dialled; it leads to the local stand-in.
      return Net.connect({ host: "127.0.0.1", port: address === PUBLIC ? standInPort : 9 })
    }
  })
})

afterAll(async () => {
  await proxy.close()
  standIn.close()
  Fs.rmSync(dir, { recursive: true, force: true })
})

describe("CI egress proxy", () => {
  it("allows public addresses and refuses loopback, private, link-local, metadata, reserved and host addresses", async () => {
    expect(await decideEgress("1.1.1.1", 443)).toMatchObject({ allowed: true, addresses: ["1.1.1.1"] })
    expect(await decideEgress("[2606:4700:4700::1111]", 443)).toMatchObject({ allowed: true })
    const own = Object.values(Os.networkInterfaces()).flat().map((entry) => entry!.address)
    for (
      const host of [
        "127.0.0.1",
        "127.1.2.3",
        "[::1]",
        "10.0.0.1",
        "172.16.5.5",
        "192.168.1.1",
        "169.254.169.254",
        "[fe80::1]",
        "[fd00::1]",
        "100.64.0.1",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        ...own
      ]
    ) {
      const decision = await decideEgress(host, 443)
      expect(decision.allowed, host).toBe(false)
      expect(decision.reason).toMatch(/public addresses only/)
    }
    // A name is judged by every address it resolves to.
    expect(await decideEgress("registry.example", 443, resolve)).toMatchObject({ allowed: true, addresses: [PUBLIC] })
    expect((await decideEgress("rebind.example", 443, resolve)).reason).toMatch(/10\.1\.2\.3, a private address/)
    expect((await decideEgress("metadata.example", 80, resolve)).reason).toMatch(/link-local/)
    expect((await decideEgress("nowhere.example", 443, resolve)).reason).toMatch(/did not resolve \(ENOTFOUND\)/)
    expect((await decideEgress("registry.example", 25, resolve)).reason).toMatch(/port 25/)
    // CI_NETWORK_ALLOW_CIDRS opens a private range (a registry mirror), never loopback nor this host.
    const mirror = [
      "10.1.0.0/16",
      "127.0.0.0/8",
      ...own.map((address) => address.includes(":") ? `${address}/128` : `${address}/32`)
    ]
    expect(await decideEgress("10.1.2.3", 443, resolve, mirror)).toMatchObject({ allowed: true })
    expect(await decideEgress("10.2.0.1", 443, resolve, mirror)).toMatchObject({ allowed: false })
    expect(await decideEgress("127.0.0.1", 443, resolve, mirror)).toMatchObject({ allowed: false })
    for (const address of own) {
      expect(await decideEgress(address, 443, resolve, mirror), address).toMatchObject({ allowed: false })
    }
  })

  it("tunnels CONNECT and forwards plain HTTP to an allowed address only, answering 403 otherwise", async () => {
    const tunnel = await ask("CONNECT registry.example:443 HTTP/1.1\r\nHost: registry.example:443\r\n\r\n", "hello")
    expect(tunnel).toBe("HTTP/1.1 200 Connection Established\r\n\r\necho:hello")
    const plain = await ask("GET http://registry.example/pkg?x=1 HTTP/1.1\r\nHost: registry.example\r\n\r\n")
    expect(plain).toMatch(/^HTTP\/1\.1 200 OK/)
    expect(plain).toContain("stand-in saw: GET /pkg?x=1 HTTP/1.1")
    expect(connected).toEqual([`${PUBLIC}:443`, `${PUBLIC}:80`])

    for (
      const target of [
        "127.0.0.1:5432",
        "loopback.example:3000",
        "metadata.example:80",
        "rebind.example:443",
        "[::1]:22"
      ]
    ) {
      const refused = await ask(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
      expect(refused, target).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n[\s\S]*public addresses only/)
    }
    expect(await ask("GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: x\r\n\r\n")).toMatch(
      /^HTTP\/1\.1 403/
    )
    expect(await ask("GET /relative HTTP/1.1\r\nHost: x\r\n\r\n")).toMatch(/^HTTP\/1\.1 400/)
    // Nothing but the public address was ever dialled.
    expect(connected).toEqual([`${PUBLIC}:443`, `${PUBLIC}:80`])
  })
})
