import { describe, expect, it } from "@effect/vitest"
import {
  components,
  culprit,
  fingerprint,
  issueTitle,
  normalizeFilename,
  parameterizeMessage
} from "../../services/observe/Fingerprint.ts"

const frames = (...entries: ReadonlyArray<readonly [string, string, number?, boolean?]>) =>
  entries.map(([fn, file, line, inApp]) => ({
    function: fn,
    filename: file,
    lineno: line ?? 1,
    colno: 7,
    ...(inApp === undefined ? {} : { in_app: inApp })
  }))

const exception = (type: string, value: string, stack: ReturnType<typeof frames>) => ({
  message: value,
  exception: { type, value, stacktrace: { frames: stack } }
})

describe("fingerprinting", () => {
  it("ignores line and column numbers and the message when there is a stack", () => {
    const a = exception("TypeError", "x is 1", frames(["main", "src/a.js", 10], ["run", "src/b.js", 20]))
    const b = exception("TypeError", "y is 2", frames(["main", "src/a.js", 99], ["run", "src/b.js", 7]))
    expect(fingerprint(a)).toBe(fingerprint(b))
  })

  it("separates another function, another file and another type", () => {
    const base = fingerprint(exception("TypeError", "x", frames(["main", "src/a.js"], ["run", "src/b.js"])))
    expect(fingerprint(exception("TypeError", "x", frames(["main", "src/a.js"], ["walk", "src/b.js"])))).not.toBe(base)
    expect(fingerprint(exception("TypeError", "x", frames(["main", "src/a.js"], ["run", "src/c.js"])))).not.toBe(base)
    expect(fingerprint(exception("RangeError", "x", frames(["main", "src/a.js"], ["run", "src/b.js"])))).not.toBe(base)
  })

  it("uses only in-app frames when some are marked, all frames otherwise", () => {
    const withLibrary = (lib: string) =>
      exception("Error", "x", frames(["handler", "src/app.js", 1, true], [lib, "node_modules/lib/index.js", 5, false]))
    expect(fingerprint(withLibrary("libA"))).toBe(fingerprint(withLibrary("libB")))
    const unmarked = (lib: string) => exception("Error", "x", frames(["handler", "src/app.js"], [lib, "lib.js"]))
    expect(fingerprint(unmarked("libA"))).not.toBe(fingerprint(unmarked("libB")))
  })

  it("normalises filenames: host, query, hashes and ~/ do not matter", () => {
    expect(normalizeFilename("https://cdn.example.com/static/js/main.3f2a1b9c.js?v=12#x")).toBe("/static/js/main.js")
    expect(normalizeFilename("https://other.example.org/static/js/main.9e8d7c6b.js")).toBe("/static/js/main.js")
    expect(normalizeFilename("~/static/js/main.js")).toBe("/static/js/main.js")
    expect(normalizeFilename("app:///dist/chunk-AB12CD34.js")).toBe("/dist/chunk.js")
    expect(normalizeFilename("webpack://src/components/Button.tsx")).toBe("/components/Button.tsx")
    expect(normalizeFilename("src/handler.js")).toBe("src/handler.js")
    const deployed = (url: string) => fingerprint(exception("Error", "x", frames(["render", url])))
    expect(deployed("https://a.example.com/app.1a2b3c4d.js")).toBe(
      deployed("https://b.example.com/app.ffee0011.js?x=1")
    )
  })

  it("parameterises messages without frames", () => {
    expect(parameterizeMessage("User 42 not found")).toBe("User <num> not found")
    expect(parameterizeMessage("Request 3f2a1b9c0d from 10.0.0.12:8080 failed")).toBe(
      "Request <hex> from <ip> failed"
    )
    expect(parameterizeMessage("Key 'abc' missing in \"users\"")).toBe("Key <str> missing in <str>")
    expect(parameterizeMessage("id 123e4567-e89b-12d3-a456-426614174000 at 0xdeadbeef")).toBe("id <uuid> at <hex>")
    expect(parameterizeMessage("dial fe80::1:2:3 refused")).toBe("dial <ip> refused")
    const message = (text: string) => fingerprint({ message: text })
    expect(message("Timeout after 3000 ms for order 17")).toBe(message("Timeout after 15 ms for order 99102"))
    expect(message("Timeout after 3000 ms")).not.toBe(message("Connection refused"))
    expect(fingerprint({ message: "x", exception: { type: "A" } })).not.toBe(
      fingerprint({ message: "x", exception: { type: "B" } })
    )
  })

  it("a custom fingerprint overrides; {{ default }} expands to the computed one", () => {
    const a = { ...exception("Error", "x", frames(["f", "a.js"])), fingerprint: ["db-down"] }
    const b = { ...exception("Other", "y", frames(["g", "b.js"])), fingerprint: ["db-down"] }
    expect(fingerprint(a)).toBe(fingerprint(b))
    const withDefault = (fn: string, tenant: string) => ({
      ...exception("Error", "x", frames([fn, "a.js"])),
      fingerprint: ["{{ default }}", tenant]
    })
    expect(fingerprint(withDefault("f", "t1"))).not.toBe(fingerprint(withDefault("f", "t2")))
    expect(fingerprint(withDefault("f", "t1"))).not.toBe(fingerprint(withDefault("g", "t1")))
    expect(components(withDefault("f", "t1"))).toEqual(["{{default}}", "Error", "a.js|f", "custom:t1"])
    // A literal part never collides with a computed component.
    expect(fingerprint({ message: "x", fingerprint: ["Error"] })).not.toBe(fingerprint({ message: "x" }))
  })

  it("titles and culprits", () => {
    const event = exception("TypeError", "x is undefined", frames(["main", "src/a.js"], ["run", "src/b.js"]))
    expect(issueTitle(event)).toBe("TypeError: x is undefined")
    expect(culprit(event)).toBe("run (src/b.js)")
    expect(issueTitle({ message: "plain" })).toBe("plain")
    expect(culprit({ message: "plain" })).toBeNull()
  })
})
