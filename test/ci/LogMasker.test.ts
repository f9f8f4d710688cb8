import { describe, expect, it } from "@effect/vitest"
import { LogMasker } from "../../services/ci/LogMasker.ts"

const run = (secrets: Array<string>, chunks: Array<string | Buffer>) => {
  const masker = new LogMasker(secrets)
  const emitted = chunks.map((chunk) => masker.push(chunk))
  return { emitted, text: emitted.join("") + masker.end() }
}

describe("LogMasker", () => {
  it("masks a secret inside one chunk and across chunk boundaries", () => {
    expect(run(["hunter22"], ["pw=hunter22\n"]).text).toBe("pw=***\n")
    const split = run(["hunter22"], ["pw=hun", "te", "r22 ok\n"])
    expect(split.text).toBe("pw=*** ok\n")
    // Nothing of the secret is emitted before it is known to be one.
    expect(split.emitted.join("")).not.toContain("hun")
  })

  it("emits a held-back prefix once it turns out not to be the secret", () => {
    const { emitted, text } = run(["hunter22"], ["say hun", "gry\n"])
    expect(emitted[0]).toBe("say ")
    expect(text).toBe("say hungry\n")
  })

  it("masks several secrets, the longest first, and UTF-8 split inside a character", () => {
    const bytes = Buffer.from("clé=abc-123-xyz ✓\n", "utf8")
    const chunks = [bytes.subarray(0, 3), bytes.subarray(3, 9), bytes.subarray(9, 17), bytes.subarray(17)]
    expect(run(["abc-123", "abc-123-xyz"], chunks).text).toBe("clé=*** ✓\n")
  })

  it("ignores values too short to mask meaningfully", () => {
    expect(run(["a", ""], ["a banana\n"]).text).toBe("a banana\n")
  })
})
