import picomatch from "picomatch"

/**
 * CODEOWNERS files with GitHub's semantics (GUIDE §11), as pure functions:
 * - each line is a gitignore-style pattern followed by owners; `#` starts a comment;
 * - a pattern without a `/` (other than a trailing one) matches at any depth; a leading
 *   `/` or a `/` inside anchors it at the root; a trailing `/` matches what a directory
 *   holds; `*` does not cross `/`, `**` matches any depth; a pattern naming a directory
 *   also matches everything below it, except one ending in `/*` (GitHub: `docs/*` owns
 *   `docs/a.md`, not `docs/build/a.md`);
 * - the last matching line wins; a pattern without owners leaves the paths it matches
 *   unowned;
 * - owners are `@username`, `@org/team` (kept as written) or an e-mail address;
 * - a line GitHub cannot use (negation `!`, character ranges `[ ]`, a malformed owner) is
 *   skipped and reported with its line number.
 */

/** Where CODEOWNERS is looked for, in this order (GUIDE §11); the first found is used. */
export const CODEOWNERS_PATHS: ReadonlyArray<string> = ["CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS"]

export interface CodeOwnersRule {
  readonly line: number
  readonly pattern: string
  /** `username` (no `@`), `@org/team`, or an e-mail address; empty: the paths are unowned. */
  readonly owners: ReadonlyArray<string>
  readonly matches: (path: string) => boolean
}

export interface CodeOwnersError {
  readonly line: number
  readonly message: string
  readonly text: string
}

export interface CodeOwnersFile {
  readonly rules: ReadonlyArray<CodeOwnersRule>
  readonly errors: ReadonlyArray<CodeOwnersError>
}

const USER = /^@([A-Za-z0-9][A-Za-z0-9_.-]{0,38})$/
const TEAM = /^@[A-Za-z0-9][A-Za-z0-9_.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*$/
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/

/** Splits a line on unescaped white space, dropping a trailing comment; `\x` becomes `x`. */
const tokens = (line: string): Array<string> => {
  const out: Array<string> = []
  let current = ""
  let started = false
  for (let i = 0; i < line.length; i++) {
    const char = line[i]
    if (char === "\\" && i + 1 < line.length) {
      current += line[++i]
      started = true
    } else if (char === " " || char === "\t") {
      if (started) out.push(current)
      current = ""
      started = false
    } else if (char === "#" && !started) {
      break
    } else {
      current += char
      started = true
    }
  }
  if (started) out.push(current)
  return out
}

/** The owner as `forPaths` reports it, or undefined when it is not a valid owner. */
export const normaliseOwner = (owner: string): string | undefined => {
  const user = USER.exec(owner)
  if (user !== null) return user[1]
  if (TEAM.test(owner)) return owner
  if (EMAIL.test(owner)) return owner
  return undefined
}

/** The path matcher of one pattern (see the module comment). */
export const compilePattern = (pattern: string): (path: string) => boolean => {
  const directoryOnly = pattern.endsWith("/")
  let glob = pattern.replace(/\/+$/, "")
  const anchored = glob.startsWith("/") || glob.includes("/")
  glob = glob.replace(/^\/+/, "")
  if (!anchored) glob = `**/${glob}`
  const options = { dot: true }
  const self = picomatch(glob, options)
  const contents = glob.slice(glob.lastIndexOf("/") + 1) !== "*"
  return (path: string) => {
    const clean = path.replace(/^\/+/, "")
    if (!directoryOnly && self(clean)) return true
    if (!directoryOnly && !contents) return false
    // A directory the path lies in matches: the path is part of its contents.
    for (let i = clean.indexOf("/"); i > 0; i = clean.indexOf("/", i + 1)) {
      if (self(clean.slice(0, i))) return true
    }
    return false
  }
}

export const parseCodeOwners = (text: string): CodeOwnersFile => {
  const rules: Array<CodeOwnersRule> = []
  const errors: Array<CodeOwnersError> = []
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1
    const parts = tokens(raw)
    if (parts.length === 0) return
    const [pattern, ...owners] = parts
    const fail = (message: string) => errors.push({ line, message, text: raw })
    if (pattern.startsWith("!")) return fail("Negation patterns are not supported")
    if (/[[\]]/.test(pattern)) return fail("Character ranges ([ ]) are not supported")
    if (pattern === "/" || pattern.replace(/\/+$/, "") === "") return fail("Pattern matches nothing")
    const normalised: Array<string> = []
    for (const owner of owners) {
      const valid = normaliseOwner(owner)
      if (valid === undefined) {
        return fail(`Invalid owner '${owner}': expected @username, @org/team or an e-mail address`)
      }
      if (!normalised.includes(valid)) normalised.push(valid)
    }
    let matches: (path: string) => boolean
    try {
      matches = compilePattern(pattern)
    } catch (error) {
      return fail(`Invalid pattern: ${(error as Error).message}`)
    }
    rules.push({ line, pattern, owners: normalised, matches })
  })
  return { rules, errors }
}

/** The owners of one path: the last matching rule's (empty when none matches or it has none). */
export const ownersOf = (file: CodeOwnersFile, path: string): ReadonlyArray<string> => {
  for (let i = file.rules.length - 1; i >= 0; i--) {
    if (file.rules[i].matches(path)) return file.rules[i].owners
  }
  return []
}
