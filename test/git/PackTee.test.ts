import { PassThrough } from "node:stream"
import { buffer } from "node:stream/consumers"
import { describe, expect, it } from "vitest"
import { PackTee } from "../../services/git/PackTee.ts"

const recorder = () => {
  const seen: Array<Buffer> = []
  const ends: Array<boolean> = []
  return {
    seen,
    ends,
    observer: { data: (chunk: Buffer) => void seen.push(chunk), end: (ok: boolean) => void ends.push(ok) }
  }
}

describe("PackTee", () => {
  it("shows an observer added before sealing the whole pack, bytes the reader also gets unchanged", async () => {
    const tee = new PackTee()
    tee.write(Buffer.from("PACK head "))
    const early = recorder()
    tee.observe(early.observer)
    tee.seal()
    const late = recorder()
    tee.write(Buffer.from("and the rest"))
    tee.observe(late.observer)
    tee.end()
    expect((await buffer(tee)).toString()).toBe("PACK head and the rest")
    expect(Buffer.concat(early.seen).toString()).toBe("PACK head and the rest")
    expect(early.ends).toEqual([true])
    // Added after sealing: what went by before is gone.
    expect(Buffer.concat(late.seen).toString()).toBe("")
    expect(late.ends).toEqual([true])
  })

  it("a throwing observer does not disturb the pack; a broken request ends observers with false", async () => {
    const source = new PassThrough()
    const tee = new PackTee()
    tee.observe({
      data: () => {
        throw new Error("observer bug")
      },
      end: () => {
        throw new Error("observer bug")
      }
    })
    const watched = recorder()
    tee.observe(watched.observer)
    source.pipe(tee)
    source.end(Buffer.from("bytes"))
    expect((await buffer(tee)).toString()).toBe("bytes")
    expect(watched.ends).toEqual([true])

    const broken = new PackTee()
    const cut = recorder()
    broken.observe(cut.observer)
    broken.on("error", () => undefined)
    broken.destroy(new Error("client went away"))
    expect(cut.ends).toEqual([false])
  })
})
