import { Effect } from "effect"
import * as Dns from "node:dns"
import { isIP } from "node:net"
import { type CheckContext, parseUrl } from "./network.ts"
import { CheckFailure, type CheckSuccess, type CheckTarget, type DnsRecordType } from "./types.ts"

/** `dns://name` (or a bare name) → the name to resolve. */
export const parseDnsTarget = (url: string): string | undefined => {
  if (!url.includes("://")) return url.trim() === "" ? undefined : url.trim().replace(/\.$/, "")
  const parsed = parseUrl(url)
  if (parsed === undefined || parsed.protocol !== "dns:" || parsed.hostname === "") return undefined
  return decodeURIComponent(parsed.hostname).replace(/\.$/, "")
}

const resolveRecords = (resolver: Dns.Resolver, name: string, type: DnsRecordType) =>
  new Promise<ReadonlyArray<string>>((resolve, reject) => {
    const done = <A>(map: (records: A) => ReadonlyArray<string>) => (error: NodeJS.ErrnoException | null, records: A) =>
      error ? reject(error) : resolve(map(records))
    switch (type) {
      case "A":
        return resolver.resolve4(name, done<Array<string>>((r) => r))
      case "AAAA":
        return resolver.resolve6(name, done<Array<string>>((r) => r))
      case "CNAME":
        return resolver.resolveCname(name, done<Array<string>>((r) => r))
      case "NS":
        return resolver.resolveNs(name, done<Array<string>>((r) => r))
      case "MX":
        return resolver.resolveMx(
          name,
          done<Array<Dns.MxRecord>>((r) => r.map((mx) => `${mx.priority} ${mx.exchange}`))
        )
      case "TXT":
        return resolver.resolveTxt(name, done<Array<Array<string>>>((r) => r.map((chunks) => chunks.join(""))))
    }
  })

const normalizeName = (name: string) => name.trim().toLowerCase().replace(/\.$/, "")

const canonicalIp = (address: string): string => {
  if (isIP(address) !== 6) return address.trim()
  try {
    return new URL(`http://[${address.trim()}]/`).hostname
  } catch {
    return address.trim()
  }
}

/** Whether `expected` names one of the answers, compared the way the record type reads. */
export const answerMatches = (type: DnsRecordType, answer: string, expected: string): boolean => {
  switch (type) {
    case "A":
    case "AAAA":
      return canonicalIp(answer) === canonicalIp(expected)
    case "CNAME":
    case "NS":
      return normalizeName(answer) === normalizeName(expected)
    case "MX": {
      // "10 mail.example.com" or just "mail.example.com"
      const [priority, exchange] = answer.split(" ")
      const wanted = expected.trim().split(/\s+/)
      return wanted.length === 1
        ? normalizeName(exchange) === normalizeName(wanted[0])
        : priority === wanted[0] && normalizeName(exchange) === normalizeName(wanted[1])
    }
    case "TXT":
      return answer === expected
  }
}

const describeDnsError = (error: NodeJS.ErrnoException, name: string, type: DnsRecordType): string => {
  const code = error.code ?? "ESERVFAIL"
  switch (code) {
    case Dns.NOTFOUND:
      return `DNS lookup failed: ENOTFOUND (NXDOMAIN) for ${name}`
    case Dns.NODATA:
      return `DNS lookup failed: ENODATA (no ${type} records) for ${name}`
    case Dns.TIMEOUT:
      return `DNS lookup failed: ETIMEOUT (no answer from the DNS server) for ${name}`
    case Dns.SERVFAIL:
      return `DNS lookup failed: ESERVFAIL for ${name}`
    case Dns.REFUSED:
      return `DNS lookup failed: EREFUSED for ${name}`
    case Dns.CONNREFUSED:
      return `DNS lookup failed: ECONNREFUSED (DNS server unreachable) for ${name}`
    default:
      return `DNS lookup failed: ${code} for ${name}`
  }
}

/**
 * `dns`: the name resolves (default record type A) on the configured DNS servers;
 * with `expectedValue`, it must be among the answers. No connection is made to the
 * answers, so the outbound guard does not apply.
 */
export const dnsCheck = (context: CheckContext, target: CheckTarget): Effect.Effect<CheckSuccess, CheckFailure> =>
  Effect.gen(function*() {
    const name = parseDnsTarget(target.url)
    if (name === undefined) {
      return yield* new CheckFailure({ message: `invalid URL: ${target.url} (expected dns://name)` })
    }
    const type = target.dnsRecordType ?? "A"
    const timeoutMs = Math.max(500, Math.floor((target.timeoutSeconds * 1000) / 2))
    const resolver = new Dns.Resolver({ timeout: timeoutMs, tries: 2 })
    if (context.options.dnsServers !== undefined && context.options.dnsServers.length > 0) {
      try {
        resolver.setServers([...context.options.dnsServers])
      } catch (error) {
        return yield* new CheckFailure({ message: `invalid DNS server configuration: ${String(error)}` })
      }
    }
    const answers = yield* Effect.callback<ReadonlyArray<string>, CheckFailure>((resume) => {
      resolveRecords(resolver, name, type).then(
        (records) => resume(Effect.succeed(records)),
        (error: NodeJS.ErrnoException) =>
          resume(Effect.fail(new CheckFailure({ message: describeDnsError(error, name, type) })))
      )
      return Effect.sync(() => resolver.cancel())
    })
    if (answers.length === 0) {
      return yield* new CheckFailure({ message: `DNS lookup failed: ENODATA (no ${type} records) for ${name}` })
    }
    const expected = target.expectedValue?.trim()
    if (expected !== undefined && expected !== "" && !answers.some((answer) => answerMatches(type, answer, expected))) {
      // The answers themselves are not echoed: the resolver may see internal names the tenant should not read.
      const count = answers.length === 1 ? "the 1 answer" : `the ${answers.length} answers`
      return yield* new CheckFailure({ message: `expected ${type} record ${expected}, not among ${count}` })
    }
    return {}
  })
