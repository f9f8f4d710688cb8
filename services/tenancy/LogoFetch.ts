import { Effect } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import type { OutboundGuardShape } from "../outbound/OutboundGuard.ts"

/**
 * Fetching an organization's logo from the URL its admin gave: every hop through the
 * outbound guard (SSRF: only checked addresses are connected to, redirects re-checked),
 * bounded in time and size, and accepted only when it is one of the image types a status
 * page may show — by its Content-Type *and* its first bytes, so an HTML page labelled
 * `image/png` is refused.
 */

export const LOGO_MAX_BYTES = 512 * 1024
const TIMEOUT_MS = 10_000
const MAX_REDIRECTS = 3

export const LOGO_TYPES: ReadonlyArray<string> = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"]

export interface FetchedLogo {
  readonly bytes: Uint8Array
  readonly contentType: string
}

/** Why `raw` cannot be a logo URL, or undefined (http only where the guard allows private targets: tests, self-hosting). */
export const logoUrlProblem = (raw: string, allowHttp: boolean): string | undefined => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "must be an absolute URL"
  }
  if (url.protocol !== "https:" && !(allowHttp && url.protocol === "http:")) {
    return allowHttp ? "must be http or https" : "must be https"
  }
  if (url.username !== "" || url.password !== "") return "must not carry credentials"
  return undefined
}

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>, at = 0) =>
  prefix.every((byte, index) => bytes[at + index] === byte)

/** Do the bytes look like `type`? (Magic numbers; an SVG is XML whose root is `<svg`.) */
const looksLike = (type: string, bytes: Uint8Array): boolean => {
  switch (type) {
    case "image/png":
      return startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    case "image/jpeg":
      return startsWith(bytes, [0xff, 0xd8, 0xff])
    case "image/gif":
      return startsWith(bytes, [0x47, 0x49, 0x46, 0x38])
    case "image/webp":
      return startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)
    case "image/svg+xml":
      return /<svg[\s>]/.test(Buffer.from(bytes.subarray(0, 4096)).toString("utf8"))
    default:
      return false
  }
}

interface Hop {
  readonly status: number
  readonly location: string | undefined
  readonly contentType: string
  readonly bytes: Uint8Array
}

/** One GET to checked addresses: the status, and the body up to the cap (a larger body fails). */
const get = (guard: OutboundGuardShape, url: URL) =>
  Effect.flatMap(guard.resolve(url.hostname), (addresses) =>
    Effect.callback<Hop, string>((resumeOnce) => {
      // A destroyed request still emits `error`: only the first outcome counts.
      let settled = false
      const resume = (outcome: Effect.Effect<Hop, string>) => {
        if (!settled) {
          settled = true
          resumeOnce(outcome)
        }
      }
      const client = url.protocol === "https:" ? Https : Http
      const request = client.get(url, {
        lookup: guard.pinnedLookup(addresses),
        agent: false,
        timeout: TIMEOUT_MS,
        headers: { accept: LOGO_TYPES.join(", "), "user-agent": "Canopy-Logo/1" }
      }, (response) => {
        const status = response.statusCode ?? 0
        const location = response.headers.location
        const contentType = (response.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase()
        if (status !== 200) {
          response.resume()
          resume(Effect.succeed({ status, location, contentType, bytes: new Uint8Array() }))
          return
        }
        const declared = Number(response.headers["content-length"] ?? "0")
        if (declared > LOGO_MAX_BYTES) {
          request.destroy()
          resume(Effect.fail(`the image is larger than ${LOGO_MAX_BYTES / 1024} KiB`))
          return
        }
        const chunks: Array<Buffer> = []
        let size = 0
        response.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > LOGO_MAX_BYTES) {
            request.destroy()
            resume(Effect.fail(`the image is larger than ${LOGO_MAX_BYTES / 1024} KiB`))
          } else chunks.push(chunk)
        })
        response.on("end", () =>
          resume(Effect.succeed({ status, location, contentType, bytes: new Uint8Array(Buffer.concat(chunks)) })))
        response.on("error", (error) =>
          resume(Effect.fail(`the response broke off: ${error.message}`)))
      })
      request.on("timeout", () => request.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)))
      request.on("error", (error) => resume(Effect.fail(`the request failed: ${error.message}`)))
      return Effect.sync(() => request.destroy())
    })).pipe(
      Effect.catchTags({
        OutboundBlocked: (blocked) => Effect.fail(`the address is not allowed: ${blocked.message}`),
        OutboundLookupFailed: (failed) => Effect.fail(`the host could not be resolved: ${failed.message}`)
      })
    )

/** The logo at `raw`, or a sentence saying why it cannot be used. */
export const fetchLogo = (guard: OutboundGuardShape, raw: string): Effect.Effect<FetchedLogo, string> =>
  Effect.gen(function*() {
    let url = new URL(raw)
    for (let hops = 0;; hops++) {
      const hop = yield* get(guard, url)
      if (hop.status >= 300 && hop.status < 400 && hop.location !== undefined) {
        if (hops === MAX_REDIRECTS) return yield* Effect.fail(`more than ${MAX_REDIRECTS} redirects`)
        url = new URL(hop.location, url)
        const problem = logoUrlProblem(url.href, guard.allowPrivate)
        if (problem !== undefined) return yield* Effect.fail(`a redirect's target ${problem}`)
        continue
      }
      if (hop.status !== 200) return yield* Effect.fail(`the server answered ${hop.status}`)
      if (!LOGO_TYPES.includes(hop.contentType)) {
        return yield* Effect.fail(
          `the content type ${
            hop.contentType === "" ? "is missing" : `'${hop.contentType}'`
          } is not an image (png, jpeg, gif, webp or svg)`
        )
      }
      if (!looksLike(hop.contentType, hop.bytes)) {
        return yield* Effect.fail(`the body is not a ${hop.contentType} image`)
      }
      return { bytes: hop.bytes, contentType: hop.contentType }
    }
  })
