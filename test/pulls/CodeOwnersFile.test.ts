import { describe, expect, it } from "vitest"
import { compilePattern, ownersOf, parseCodeOwners } from "../../services/pulls/CodeOwnersFile.ts"

const owners = (text: string, path: string) => ownersOf(parseCodeOwners(text), path)

describe("CODEOWNERS patterns", () => {
  it("a pattern without a slash matches at any depth; a leading or inner slash anchors at the root", () => {
    expect(compilePattern("*.js")("a/b/c.js")).toBe(true)
    expect(compilePattern("*.js")("c.js")).toBe(true)
    expect(compilePattern("*.js")("c.ts")).toBe(false)
    expect(compilePattern("/build")("build/x.o")).toBe(true)
    expect(compilePattern("/build")("src/build/x.o")).toBe(false)
    expect(compilePattern("build")("src/build/x.o")).toBe(true)
    expect(compilePattern("src/lib")("src/lib/a.ts")).toBe(true)
    expect(compilePattern("src/lib")("other/src/lib/a.ts")).toBe(false)
  })

  it("a trailing slash matches a directory's contents, at any depth unless anchored", () => {
    expect(compilePattern("apps/")("apps/web/index.ts")).toBe(true)
    expect(compilePattern("apps/")("services/apps/x.ts")).toBe(true)
    expect(compilePattern("apps/")("apps")).toBe(false)
    expect(compilePattern("/docs/")("docs/guide/a.md")).toBe(true)
    expect(compilePattern("/docs/")("site/docs/a.md")).toBe(false)
  })

  it("`*` stays inside one directory; `**` crosses any number", () => {
    expect(compilePattern("docs/*")("docs/getting-started.md")).toBe(true)
    expect(compilePattern("docs/*")("docs/build-app/troubleshooting.md")).toBe(false)
    expect(compilePattern("docs/**")("docs/build-app/troubleshooting.md")).toBe(true)
    expect(compilePattern("**/logs")("deep/down/logs/today.log")).toBe(true)
    expect(compilePattern("**/logs")("logs/today.log")).toBe(true)
    expect(compilePattern("src/**/test.ts")("src/a/b/test.ts")).toBe(true)
    expect(compilePattern("src/**/test.ts")("src/test.ts")).toBe(true)
    expect(compilePattern("*")(".github/workflows/ci.yml")).toBe(true)
  })
})

describe("CODEOWNERS files", () => {
  const file = [
    "# Default owners",
    "*       @global",
    "",
    "*.js    @js-owner   js@example.com # inline comment",
    "/docs/  @docs-team @acme/writers",
    "docs/generated/",
    "/apps/api/   @api  @API",
    "path\\ with\\ spaces.txt @spacey"
  ].join("\n")

  it("the last matching line wins", () => {
    expect(owners(file, "README.md")).toEqual(["global"])
    expect(owners(file, "src/index.js")).toEqual(["js-owner", "js@example.com"])
    // /docs/ comes after *.js: the docs owners win for a JS file under docs.
    expect(owners(file, "docs/script.js")).toEqual(["docs-team", "@acme/writers"])
    expect(owners(file, "apps/api/server.ts")).toEqual(["api", "API"])
    expect(owners(file, "path with spaces.txt")).toEqual(["spacey"])
  })

  it("a pattern without owners leaves the paths it matches unowned", () => {
    expect(owners(file, "docs/generated/api.md")).toEqual([])
    expect(owners(file, "docs/guide.md")).toEqual(["docs-team", "@acme/writers"])
    expect(owners("", "anything")).toEqual([])
  })

  it("reports the lines it cannot use, with their number, and skips them", () => {
    const parsed = parseCodeOwners(
      ["* @base", "!secret.txt @nobody", "[ab].txt @range", "*.md not-an-owner", "*.md @ok", "  # indented comment"]
        .join("\n")
    )
    expect(parsed.errors).toEqual([
      { line: 2, message: "Negation patterns are not supported", text: "!secret.txt @nobody" },
      { line: 3, message: "Character ranges ([ ]) are not supported", text: "[ab].txt @range" },
      {
        line: 4,
        message: "Invalid owner 'not-an-owner': expected @username, @org/team or an e-mail address",
        text: "*.md not-an-owner"
      }
    ])
    expect(parsed.rules.map((rule) => rule.line)).toEqual([1, 5])
    expect(ownersOf(parsed, "secret.txt")).toEqual(["base"])
    expect(ownersOf(parsed, "a.md")).toEqual(["ok"])
  })
})
