import { hash } from "node:crypto"

/**
 * Grouping of error events into issues (GUIDE §7). Pure: the same input always gives the
 * same fingerprint, so it is unit-tested without a database.
 *
 * - With frames: the exception type plus, per in-app frame (all frames if none is marked),
 *   the normalised module or filename and the function — never line or column, so a
 *   redeploy that moves code keeps its issues.
 * - Without frames: the type plus the message with its variable parts (numbers, hex,
 *   UUIDs, IPs, quoted strings) replaced by placeholders.
 * - An event's own `fingerprint` array overrides; `{{ default }}` expands to the computed one.
 */

export interface FingerprintFrame {
  readonly filename?: string | undefined
  readonly abs_path?: string | undefined
  readonly module?: string | undefined
  readonly function?: string | undefined
  readonly in_app?: boolean | undefined
}

export interface FingerprintInput {
  readonly message?: string | undefined
  readonly exception?: {
    readonly type?: string | undefined
    readonly value?: string | undefined
    readonly stacktrace?: { readonly frames: ReadonlyArray<FingerprintFrame> } | undefined
  } | undefined
  readonly fingerprint?: ReadonlyArray<string> | undefined
}

/**
 * A filename without what changes between deployments: scheme and host, query and
 * fragment, a leading `~/` or `./`, and content hashes in the basename
 * (`main.3f2a1b9c.js` → `main.js`, `chunk-AB12CD34.js` → `chunk.js`).
 */
export const normalizeFilename = (filename: string): string => {
  let path = filename.trim().replace(/[?#].*$/, "")
  path = path.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "") // scheme://host (also webpack://, app://)
  path = path.replace(/^~\//, "/").replace(/^\.\//, "/")
  const slash = path.lastIndexOf("/")
  const dir = path.slice(0, slash + 1)
  const base = path.slice(slash + 1)
    .replace(/[.-][0-9a-f]{6,}(?=\.)/gi, "") // main.3f2a1b9c.js, app-9f8e7d6c.js
    .replace(/[.-][A-Za-z0-9_]{8,}(?=\.(?:m?js|css)$)/, (segment) => /\d/.test(segment) ? "" : segment) // chunk-AB12CD34.js
  return dir + base
}

const placeholders: ReadonlyArray<readonly [RegExp, string]> = [
  [/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`/g, "<str>"],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>"],
  [/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b/g, "<ip>"],
  // IPv6: eight groups, or fewer around a `::`.
  [
    /\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b|\b[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*\b)?/gi,
    "<ip>"
  ],
  [/\b0x[0-9a-f]+\b/gi, "<hex>"],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi, "<hex>"],
  [/-?\b\d+(?:\.\d+)?\b/g, "<num>"]
]

/** The message with its variable parts replaced, so "user 42 not found" groups with "user 7 not found". */
export const parameterizeMessage = (message: string): string =>
  placeholders.reduce((text, [pattern, placeholder]) => text.replace(pattern, placeholder), message)

/** The frames that count for grouping: in-app ones, or all when none is marked in-app. */
export const groupingFrames = <F extends FingerprintFrame>(frames: ReadonlyArray<F>): ReadonlyArray<F> => {
  const inApp = frames.filter((frame) => frame.in_app === true)
  return inApp.length > 0 ? inApp : frames
}

const frameKey = (frame: FingerprintFrame): string => {
  const location = frame.module ?? normalizeFilename(frame.filename ?? frame.abs_path ?? "")
  return `${location}|${frame.function ?? "?"}`
}

/** The computed grouping components (before any custom `fingerprint`). */
export const defaultComponents = (event: FingerprintInput): ReadonlyArray<string> => {
  const type = event.exception?.type ?? ""
  const frames = event.exception?.stacktrace?.frames ?? []
  if (frames.length > 0) return [type, ...groupingFrames(frames).map(frameKey)]
  return [type, parameterizeMessage(event.exception?.value ?? event.message ?? "")]
}

const isDefaultMarker = (part: string) => /^\{\{\s*default\s*\}\}$/.test(part)

/** The grouping components, with a custom `fingerprint` applied. */
export const components = (event: FingerprintInput): ReadonlyArray<string> => {
  if (event.fingerprint === undefined || event.fingerprint.length === 0) return defaultComponents(event)
  return event.fingerprint.flatMap((part) =>
    isDefaultMarker(part) ? ["{{default}}", ...defaultComponents(event)] : [`custom:${part}`]
  )
}

/** SHA-256 (hex) of the grouping components. */
export const fingerprint = (event: FingerprintInput): string => hash("sha256", JSON.stringify(components(event)), "hex")

/** The issue title: `Type: value` for exceptions, else the message. */
export const issueTitle = (event: FingerprintInput): string => {
  const type = event.exception?.type
  const value = event.exception?.value ?? event.message ?? ""
  const title = type === undefined || type === "" ? value : value === "" ? type : `${type}: ${value}`
  return title.length > 200 ? `${title.slice(0, 199)}…` : title
}

/** Where the error happened: the innermost grouping frame (frames are ordered outermost first). */
export const culprit = (event: FingerprintInput): string | null => {
  const frames = groupingFrames(event.exception?.stacktrace?.frames ?? [])
  const top = frames[frames.length - 1]
  if (top === undefined) return null
  const location = top.module ?? normalizeFilename(top.filename ?? top.abs_path ?? "")
  return top.function === undefined ? location : `${top.function} (${location})`
}
