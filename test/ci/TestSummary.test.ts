import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { coverage, fromOutput, summarize } from "../../services/ci/TestSummary.ts"

const workspace = (files: Record<string, string>) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-ci-summary-"))
  for (const [name, content] of Object.entries(files)) {
    Fs.mkdirSync(Path.dirname(Path.join(dir, name)), { recursive: true })
    Fs.writeFileSync(Path.join(dir, name), content)
  }
  return dir
}

describe("test summaries", () => {
  it("reads JUnit XML reports first, with failures", async () => {
    const dir = workspace({
      "reports/junit.xml": `<?xml version="1.0"?>
<testsuites><testsuite name="math">
  <testcase classname="math" name="adds"/>
  <testcase classname="math" name="multiplies" file="test/math.js"><failure message="4 !== 5">AssertionError</failure></testcase>
  <testcase classname="math" name="divides"><skipped/></testcase>
</testsuite></testsuites>`
    })
    try {
      const summary = await summarize(dir, "# tests 99\n# pass 99\n")
      expect(summary).toEqual({
        total: 3,
        passed: 1,
        failed: 1,
        skipped: 1,
        coverage: null,
        failures: [{ name: "math › multiplies", message: "4 !== 5", file: "test/math.js" }]
      })
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("reads the closing lines of vitest, jest, pytest, cargo, go and mocha", () => {
    expect(fromOutput(" Test Files  1 failed (1)\n      Tests  1 failed | 3 passed | 1 skipped (5)\n")).toMatchObject({
      total: 5,
      passed: 3,
      failed: 1,
      skipped: 1
    })
    expect(fromOutput("Tests:       2 failed, 4 passed, 6 total\n")).toMatchObject({ total: 6, passed: 4, failed: 2 })
    expect(
      fromOutput("FAILED tests/test_a.py::test_b - assert 1 == 2\n==== 1 failed, 2 passed, 1 skipped in 0.12s ====\n")
    )
      .toMatchObject({
        total: 4,
        failed: 1,
        failures: [{ name: "tests/test_a.py::test_b", message: "assert 1 == 2", file: "tests/test_a.py" }]
      })
    expect(fromOutput("test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured\n")).toMatchObject({
      total: 3,
      failed: 1
    })
    expect(fromOutput("--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\n")).toMatchObject({
      total: 2,
      failed: 1,
      failures: [{ name: "TestB" }]
    })
    expect(fromOutput("  3 passing (5ms)\n  1 failing\n")).toMatchObject({ total: 4, passed: 3, failed: 1 })
    expect(fromOutput("nothing recognisable\n")).toBeUndefined()
  })

  it("reads line coverage from istanbul, lcov, Cobertura and Go profiles; never through a symlink", async () => {
    const cases: Array<[Record<string, string>, number | null]> = [
      [{ "coverage/coverage-summary.json": JSON.stringify({ total: { lines: { pct: 87.5 } } }) }, 87.5],
      [{ "coverage/lcov.info": "TN:\nSF:a.js\nDA:1,1\nDA:2,0\nDA:3,1\nLF:3\nLH:2\nend_of_record\n" }, 66.7],
      [{ "coverage.xml": `<?xml version="1.0"?><coverage line-rate="0.25"></coverage>` }, 25],
      [{ "coverage.out": "mode: set\na.go:1.1,2.2 3 1\na.go:3.1,4.2 1 0\n" }, 75],
      [{ "README.md": "none" }, null]
    ]
    for (const [files, expected] of cases) {
      const dir = workspace(files)
      try {
        expect(await coverage(dir)).toBe(expected)
      } finally {
        Fs.rmSync(dir, { recursive: true, force: true })
      }
    }
    const outside = workspace({ "coverage-summary.json": JSON.stringify({ total: { lines: { pct: 99 } } }) })
    const dir = workspace({})
    try {
      Fs.symlinkSync(outside, Path.join(dir, "coverage"))
      expect(await coverage(dir)).toBeNull()
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
      Fs.rmSync(outside, { recursive: true, force: true })
    }
  })
})
