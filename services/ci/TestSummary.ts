import { XMLParser } from "fast-xml-parser"
import lcovParse from "lcov-parse"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { stripVTControlCharacters } from "node:util"
import type { TestFailure, TestSummary } from "../../schemas/ci/Ci.ts"

/** At most this many failures are kept (GUIDE §14). */
const MAX_FAILURES = 50
const MAX_REPORT_BYTES = 20 * 1024 ** 2

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "",
  isArray: (name) => name === "testsuite" || name === "testcase"
})

interface Counts {
  total: number
  passed: number
  failed: number
  skipped: number
  failures: Array<TestFailure>
}

const empty = (): Counts => ({ total: 0, passed: 0, failed: 0, skipped: 0, failures: [] })

const text = (value: unknown): string => {
  if (typeof value === "string") return value
  if (Array.isArray(value)) return text(value[0])
  if (value !== null && typeof value === "object") {
    const node = value as Record<string, unknown>
    return String(node.message ?? node["#text"] ?? "")
  }
  return value === undefined || value === null ? "" : String(value)
}

/** Walks `<testsuites>`/`<testsuite>` (nested too) and counts `<testcase>`s. */
const junitSuite = (suite: Record<string, unknown>, counts: Counts) => {
  for (const testcase of (suite.testcase ?? []) as Array<Record<string, unknown>>) {
    counts.total++
    const failure = testcase.failure ?? testcase.error
    if (failure !== undefined) {
      counts.failed++
      if (counts.failures.length < MAX_FAILURES) {
        const name = [testcase.classname, testcase.name].filter((part) => typeof part === "string" && part !== "")
          .join(" › ")
        const file = typeof testcase.file === "string" ? testcase.file : undefined
        counts.failures.push({
          name: name === "" ? "(unnamed test)" : name,
          message: text(failure).trim().slice(0, 2000),
          ...(file === undefined ? {} : { file })
        })
      }
    } else if (testcase.skipped !== undefined) counts.skipped++
    else counts.passed++
  }
  for (const nested of (suite.testsuite ?? []) as Array<Record<string, unknown>>) junitSuite(nested, counts)
}

/** JUnit report file names GUIDE §14 looks for (relative to the workspace). */
const isJunitReport = (relative: string) => {
  const base = Path.basename(relative)
  if (!base.endsWith(".xml")) return false
  return base.startsWith("junit") || base.startsWith("TEST-") || relative.split(Path.sep).includes("test-results")
}

/** Files under `root`, skipping dependency and VCS folders, at most `limit` of them. */
const walk = (root: string, limit = 5000): Array<string> => {
  const out: Array<string> = []
  const queue = [""]
  while (queue.length > 0 && out.length < limit) {
    const rel = queue.shift()!
    let entries: Array<Fs.Dirent>
    try {
      entries = Fs.readdirSync(Path.join(root, rel), { withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      const child = Path.join(rel, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== ".git" && entry.name !== "target") queue.push(child)
      } else if (entry.isFile()) out.push(child)
    }
  }
  return out
}

/** A regular file of the workspace (a job may leave symlinks pointing anywhere: never follow them). */
const readSafe = (root: string, relative: string): string | undefined => {
  try {
    const path = Path.join(root, relative)
    // No symlink anywhere on the way out of the workspace (the job wrote it; we read as root).
    if (!Fs.realpathSync(path).startsWith(Fs.realpathSync(root) + Path.sep)) return undefined
    const stat = Fs.lstatSync(path)
    if (!stat.isFile() || stat.size > MAX_REPORT_BYTES) return undefined
    return Fs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

export const fromJunit = (root: string): Counts | undefined => {
  const reports = walk(root).filter(isJunitReport).sort()
  if (reports.length === 0) return undefined
  const counts = empty()
  for (const report of reports) {
    const content = readSafe(root, report)
    if (content === undefined) continue
    try {
      const doc = xml.parse(content) as Record<string, unknown>
      const top = (doc.testsuites ?? doc) as Record<string, unknown>
      junitSuite(top, counts)
    } catch {
      // not XML: ignored
    }
  }
  return counts
}

/** Failed tests of a TAP stream (node --test without a terminal): `not ok` lines and their YAML block. */
const tapFailures = (lines: ReadonlyArray<string>): Array<TestFailure> => {
  const failures: Array<TestFailure> = []
  for (let i = 0; i < lines.length && failures.length < MAX_FAILURES; i++) {
    const failed = /^(\s*)not ok \d+ - (.+?)(?: # .*)?$/.exec(lines[i])
    if (failed === null) continue
    const indent = failed[1]
    let file: string | undefined
    let message = ""
    let parent = false
    for (let j = i + 1; j < lines.length && lines[j].startsWith(indent + "  ") && lines[j].trim() !== "..."; j++) {
      const line = lines[j].trim()
      if (line === "failureType: 'subtestsFailed'") parent = true
      const location = /^location: '(.+?):\d+:\d+'$/.exec(line)
      if (location !== null) file = location[1].replace(/^\/workspace\//, "")
      if (line.startsWith("error: ")) {
        const inline = line.slice("error: ".length)
        message = inline === "|-" || inline === "|" ? (lines[j + 1] ?? "").trim() : inline.replace(/^'(.*)'$/, "$1")
      }
    }
    if (!parent) failures.push({ name: failed[2], message, ...(file === undefined ? {} : { file }) })
  }
  return failures
}

const int = (value: string | undefined) => value === undefined ? 0 : Number.parseInt(value, 10)

/**
 * The summary a test runner prints at its end (node --test, vitest, jest, mocha, pytest,
 * go test, cargo test), from the test job's log; undefined when none is recognised.
 */
export const fromOutput = (log: string): Counts | undefined => {
  const lines = stripVTControlCharacters(log).split(/\r?\n/)
  const all = lines.join("\n")
  const counts = empty()
  let m: RegExpExecArray | null
  if ((m = /^[ℹ#] tests (\d+)$/m.exec(all)) !== null) {
    // node --test (spec and tap reporters)
    counts.total = int(m[1])
    counts.passed = int(/^[ℹ#] pass (\d+)$/m.exec(all)?.[1])
    counts.failed = int(/^[ℹ#] fail (\d+)$/m.exec(all)?.[1])
    counts.skipped = int(/^[ℹ#] skipped (\d+)$/m.exec(all)?.[1]) + int(/^[ℹ#] todo (\d+)$/m.exec(all)?.[1])
    counts.failures.push(...tapFailures(lines))
    const start = lines.findIndex((line) => line.startsWith("✖ failing tests:"))
    for (let i = Math.max(start, 0); start >= 0 && i < lines.length; i++) {
      const failed = /^✖ (.+?)(?: \([\d.]+m?s\))?$/.exec(lines[i])
      if (failed === null || failed[1] === "failing tests:") continue
      const file = /^test at (.+?):\d+:\d+$/.exec(lines[i - 1] ?? "")?.[1]
      const message = lines.slice(i + 1).find((line) => line.trim() !== "")?.trim() ?? ""
      if (counts.failures.length < MAX_FAILURES) {
        counts.failures.push({ name: failed[1], message, ...(file === undefined ? {} : { file }) })
      }
    }
    return counts
  }
  if ((m = /^\s*Tests\s+(.*)\((\d+)\)\s*$/m.exec(all)) !== null) {
    // vitest: "Tests  1 failed | 2 passed (3)"
    counts.total = int(m[2])
    counts.failed = int(/(\d+) failed/.exec(m[1])?.[1])
    counts.passed = int(/(\d+) passed/.exec(m[1])?.[1])
    counts.skipped = int(/(\d+) skipped/.exec(m[1])?.[1]) + int(/(\d+) todo/.exec(m[1])?.[1])
    return counts
  }
  if ((m = /^Tests:\s+(.*?(\d+) total)\s*$/m.exec(all)) !== null) {
    // jest: "Tests:       1 failed, 2 passed, 3 total"
    counts.total = int(m[2])
    counts.failed = int(/(\d+) failed/.exec(m[1])?.[1])
    counts.passed = int(/(\d+) passed/.exec(m[1])?.[1])
    counts.skipped = int(/(\d+) skipped/.exec(m[1])?.[1]) + int(/(\d+) todo/.exec(m[1])?.[1])
    return counts
  }
  if ((m = /^=+ (.*\d+ (?:passed|failed|skipped|error).*) in [\d.]+s.* =+$/m.exec(all)) !== null) {
    // pytest: "==== 1 failed, 2 passed, 1 skipped in 0.12s ===="
    counts.failed = int(/(\d+) failed/.exec(m[1])?.[1]) + int(/(\d+) error/.exec(m[1])?.[1])
    counts.passed = int(/(\d+) passed/.exec(m[1])?.[1])
    counts.skipped = int(/(\d+) skipped/.exec(m[1])?.[1])
    counts.total = counts.failed + counts.passed + counts.skipped
    for (const line of lines) {
      const failed = /^FAILED (\S+?)(?: - (.*))?$/.exec(line)
      if (failed !== null && counts.failures.length < MAX_FAILURES) {
        counts.failures.push({ name: failed[1], message: failed[2] ?? "", file: failed[1].split("::")[0] })
      }
    }
    return counts
  }
  const cargo = [...all.matchAll(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/gm)]
  if (cargo.length > 0) {
    for (const result of cargo) {
      counts.passed += int(result[1])
      counts.failed += int(result[2])
      counts.skipped += int(result[3])
    }
    counts.total = counts.passed + counts.failed + counts.skipped
    return counts
  }
  if (/^--- (PASS|FAIL|SKIP): /m.test(all)) {
    for (const line of lines) {
      const go = /^\s*--- (PASS|FAIL|SKIP): (\S+)/.exec(line)
      if (go === null) continue
      counts.total++
      if (go[1] === "PASS") counts.passed++
      else if (go[1] === "SKIP") counts.skipped++
      else {
        counts.failed++
        if (counts.failures.length < MAX_FAILURES) counts.failures.push({ name: go[2], message: "" })
      }
    }
    return counts
  }
  const passing = /^\s*(\d+) passing/m.exec(all)
  if (passing !== null) {
    // mocha
    counts.passed = int(passing[1])
    counts.failed = int(/^\s*(\d+) failing/m.exec(all)?.[1])
    counts.skipped = int(/^\s*(\d+) pending/m.exec(all)?.[1])
    counts.total = counts.passed + counts.failed + counts.skipped
    return counts
  }
  return undefined
}

const round1 = (value: number) => Math.round(value * 10) / 10

const lcovPercent = (content: string): Promise<number | undefined> =>
  new Promise((resolve) => {
    lcovParse(content, (error, data) => {
      if (error !== null || data === undefined) return resolve(undefined)
      let found = 0
      let hit = 0
      for (const file of data) {
        found += file.lines.found
        hit += file.lines.hit
      }
      resolve(found === 0 ? undefined : round1((hit / found) * 100))
    })
  })

/**
 * Line coverage in percent from the workspace's report: `coverage/coverage-summary.json`
 * (istanbul), `coverage/lcov.info`, Cobertura `coverage.xml`, or Go's `coverage.out`.
 */
export const coverage = async (root: string): Promise<number | null> => {
  const summary = readSafe(root, "coverage/coverage-summary.json")
  if (summary !== undefined) {
    try {
      const pct = (JSON.parse(summary) as { total?: { lines?: { pct?: unknown } } }).total?.lines?.pct
      if (typeof pct === "number") return round1(pct)
    } catch {
      // not JSON
    }
  }
  const lcov = readSafe(root, "coverage/lcov.info")
  if (lcov !== undefined) {
    const pct = await lcovPercent(lcov)
    if (pct !== undefined) return pct
  }
  const cobertura = readSafe(root, "coverage.xml") ?? readSafe(root, "coverage/cobertura-coverage.xml")
  if (cobertura !== undefined) {
    try {
      const rate = Number((xml.parse(cobertura) as { coverage?: { "line-rate"?: unknown } }).coverage?.["line-rate"])
      if (Number.isFinite(rate)) return round1(rate * 100)
    } catch {
      // not XML
    }
  }
  const goCover = readSafe(root, "coverage.out")
  if (goCover !== undefined && goCover.startsWith("mode:")) {
    // Go cover profile: "file:start,end statements count" per block.
    let statements = 0
    let covered = 0
    for (const line of goCover.split("\n").slice(1)) {
      const parts = line.trim().split(" ")
      if (parts.length !== 3) continue
      const n = Number(parts[1])
      statements += n
      if (Number(parts[2]) > 0) covered += n
    }
    if (statements > 0) return round1((covered / statements) * 100)
  }
  return null
}

/** The test summary of a run (GUIDE §14): JUnit reports first, else the runner's closing lines. */
export const summarize = async (root: string, testLog: string): Promise<TestSummary | null> => {
  const counts = fromJunit(root) ?? fromOutput(testLog)
  const pct = await coverage(root)
  if (counts === undefined) {
    return pct === null ? null : { total: 0, passed: 0, failed: 0, skipped: 0, coverage: pct, failures: [] }
  }
  return { ...counts, coverage: pct }
}
