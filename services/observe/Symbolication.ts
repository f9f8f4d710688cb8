import { originalPositionFor, sourceContentFor, type TraceMap } from "@jridgewell/trace-mapping"

/**
 * The pure half of source-map symbolication (GUIDE §7): which uploaded name a frame's file
 * matches, and how a frame maps through a parsed map. `SourceMaps` adds storage and caches.
 */

/** A stack frame as ingested (Sentry's field names); `raw` is the frame before symbolication. */
export interface Frame {
  readonly filename?: string | undefined
  readonly abs_path?: string | undefined
  readonly function?: string | undefined
  readonly lineno?: number | undefined
  readonly colno?: number | undefined
  readonly in_app?: boolean | undefined
  readonly pre_context?: ReadonlyArray<string> | undefined
  readonly context_line?: string | undefined
  readonly post_context?: ReadonlyArray<string> | undefined
  readonly raw?: Omit<Frame, "raw"> | undefined
}

/** An uploaded map's name as stored: no query or fragment, no trailing `.map`. */
export const normalizeMapName = (name: string): string => name.trim().replace(/[?#].*$/, "").replace(/\.map$/, "")

/**
 * The names a frame's file can be uploaded under, best first: the full URL, its path, the
 * path as `~/path` (any host, Sentry's convention), the path without its leading slash,
 * and the bare file name.
 */
export const nameCandidates = (file: string): ReadonlyArray<string> => {
  const full = file.replace(/[?#].*$/, "")
  const url = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/.*)?$/i.exec(full)
  const path = url === null ? full : url[1] ?? "/"
  const candidates = [full, path]
  if (path.startsWith("/")) candidates.push(`~${path}`, path.slice(1))
  candidates.push(path.slice(path.lastIndexOf("/") + 1))
  return [...new Set(candidates.filter((candidate) => candidate !== "" && candidate !== "/"))]
}

/** `../src/a.js` and `./src/a.js` read `src/a.js`, so builds from other folders agree. */
const cleanSource = (source: string) => source.replace(/^(?:\.\.?\/)+/, "")

export interface MappedPosition {
  readonly source: string
  readonly line: number
  /** 0-based, as in source maps. */
  readonly column: number
  /** The original identifier at this position, if the map names one (for the callee's name). */
  readonly name: string | null
  readonly enclosing: string | undefined
}

/** Mapped positions remembered per parsed map: the same crash arrives again and again. */
const positionMemo = new WeakMap<TraceMap, Map<string, MappedPosition | undefined>>()
const MAX_MEMO_PER_MAP = 10_000
/** Where each line of a map's original sources starts, computed once per map and source. */
const lineStartsMemo = new WeakMap<TraceMap, Map<string, ReadonlyArray<number>>>()

const lineStarts = (map: TraceMap, source: string, content: string) => {
  let perSource = lineStartsMemo.get(map)
  if (perSource === undefined) lineStartsMemo.set(map, perSource = new Map())
  let starts = perSource.get(source)
  if (starts === undefined) {
    const found = [0]
    for (let at = content.indexOf("\n"); at >= 0; at = content.indexOf("\n", at + 1)) found.push(at + 1)
    perSource.set(source, starts = found)
  }
  return starts
}

const computePosition = (map: TraceMap, line: number, column: number): MappedPosition | undefined => {
  const original = originalPositionFor(map, { line, column })
  if (original.source === null) return undefined
  const content = sourceContentFor(map, original.source)
  const lineStart = content === null ? undefined : lineStarts(map, original.source, content)[original.line - 1]
  return {
    source: cleanSource(original.source),
    line: original.line,
    column: original.column,
    name: original.name,
    enclosing: content === null || lineStart === undefined
      ? undefined
      : enclosingFunctionAt(content, lineStart + original.column)
  }
}

/** Where a minified frame (1-based line and column) came from, or undefined if unmapped. */
export const mapPosition = (map: TraceMap, frame: Frame): MappedPosition | undefined => {
  if (frame.lineno === undefined || frame.lineno < 1) return undefined
  const column = Math.max(0, (frame.colno ?? 1) - 1)
  let memo = positionMemo.get(map)
  if (memo === undefined) positionMemo.set(map, memo = new Map())
  const key = `${frame.lineno}:${column}`
  if (memo.has(key)) return memo.get(key)
  const position = computePosition(map, frame.lineno, column)
  if (memo.size >= MAX_MEMO_PER_MAP) memo.clear()
  memo.set(key, position)
  return position
}

const blockKeywords = new Set(["if", "for", "while", "switch", "catch", "with", "function", "return", "do", "else"])

/** A parameter list with an optional TypeScript return type, then the end of the head. */
const ARGS = String.raw`\([^()]*\)(?:\s*:\s*[^{}()=;]+)?\s*$`
const IDENT = String.raw`([\w$]+)`
const declaredFunction = new RegExp(String.raw`function\s*\*?\s*${IDENT}\s*${ARGS}`)
const assignedFunction = new RegExp(
  String.raw`${IDENT}\s*[:=]\s*(?:async\s+)?(?:function\s*\*?\s*[\w$]*\s*${ARGS}|(?:\([^()]*\)|[\w$]+)\s*=>\s*$)`
)
const anonymousFunction = new RegExp(String.raw`(?:function\s*\*?\s*${ARGS}|=>\s*$)`)
const method = new RegExp(String.raw`(?:^|[\s;{},])(?:(?:async|static|get|set)\s+)*\*?\s*${IDENT}\s*${ARGS}`)

/** The name a function head (the text before its body's `{`) declares; null if anonymous. */
const functionHeadName = (head: string): string | null | undefined => {
  const named = declaredFunction.exec(head) ?? assignedFunction.exec(head)
  if (named) return named[1]
  if (anonymousFunction.test(head)) return null
  const member = method.exec(head)
  return member && !blockKeywords.has(member[1]) ? member[1] : undefined
}

/**
 * The function whose body holds character `offset` of `source`: climbs out through
 * unmatched braces until one opens a named function. A heuristic (braces in strings can
 * fool it), used because a map alone does not name scopes.
 */
export const enclosingFunctionAt = (source: string, offset: number): string | undefined => {
  let depth = 0
  for (let i = Math.min(source.length, offset) - 1; i >= 0; i--) {
    const char = source[i]
    if (char === "}") depth++
    else if (char === "{") {
      if (depth > 0) {
        depth--
        continue
      }
      const name = functionHeadName(source.slice(Math.max(0, i - 400), i))
      if (name === null) return undefined
      if (name !== undefined) return name
    }
  }
  return undefined
}

/**
 * Symbolicates frames (outermost caller first, as Sentry sends them) with `mapFor` giving
 * the parsed map of a frame, if any. A mapped frame takes the original file, line, column
 * and function — the enclosing function in the original source, else the name its caller
 * used to call it — and keeps the frame as received in `raw`.
 */
export const symbolicateFrames = <F extends Frame>(
  frames: ReadonlyArray<F>,
  mapFor: (frame: F, index: number) => TraceMap | undefined
): ReadonlyArray<F> => {
  const positions = frames.map((frame, index) => {
    const map = mapFor(frame, index)
    return map === undefined ? undefined : mapPosition(map, frame)
  })
  return frames.map((frame, index) => {
    const position = positions[index]
    if (position === undefined) return frame
    const callerName = index > 0 ? positions[index - 1]?.name ?? undefined : undefined
    const { raw: _raw, abs_path: _absPath, ...received } = frame
    // The context lines the SDK read are the minified file's: they stay with the raw frame.
    const { context_line: _line, post_context: _post, pre_context: _pre, ...kept } = received
    return {
      ...kept,
      filename: position.source,
      function: position.enclosing ?? callerName ?? frame.function,
      lineno: position.line,
      colno: position.column + 1,
      raw: { ...received, ...(frame.abs_path === undefined ? {} : { abs_path: frame.abs_path }) }
    } as unknown as F
  })
}
