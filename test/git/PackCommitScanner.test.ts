import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { PackCommitScanner, type ScannedCommit } from "../../services/git/PackCommitScanner.ts"

const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-pack-scan-"))
afterAll(() => Fs.rmSync(home, { recursive: true, force: true }))
const env = {
  PATH: process.env.PATH,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  HOME: home,
  GIT_AUTHOR_NAME: "Ada",
  GIT_AUTHOR_EMAIL: "ada@example.com",
  GIT_COMMITTER_NAME: "Ada",
  GIT_COMMITTER_EMAIL: "ada@example.com"
}
const git = (cwd: string, args: ReadonlyArray<string>, input?: string | Buffer) =>
  execFileSync("git", args, { cwd, env, input, maxBuffer: 64 << 20 })

/** A repository with `count` commits; `body` (when given) makes their messages long and alike. */
const repository = (name: string, count: number, body = "") => {
  const dir = Path.join(home, name)
  git(home, ["init", "-q", dir])
  for (let i = 0; i < count; i++) {
    Fs.writeFileSync(Path.join(dir, `f${i % 3}.txt`), `change ${i}\n`.repeat(50))
    git(dir, ["add", "-A"])
    git(dir, ["commit", "-q", "-m", `change ${i}`, ...(body === "" ? [] : ["-m", body])])
  }
  return dir
}

const packOf = (dir: string) => git(dir, ["pack-objects", "--stdout", "--revs"], "HEAD\n")

/** The commits a pack stores whole and deltified, as `git verify-pack` lists them. */
const storedCommits = (dir: string, pack: Buffer) => {
  const path = Path.join(dir, `scan-${Math.random().toString(36).slice(2)}.pack`)
  Fs.writeFileSync(path, pack)
  git(dir, ["index-pack", path])
  const lines = git(dir, ["verify-pack", "-v", path]).toString("utf8").split("\n")
  const commits = lines.map((line) => line.split(/\s+/)).filter((fields) => fields[1] === "commit")
  const firstTree = lines.map((line) => line.split(/\s+/)).find((fields) =>
    fields[1] === "tree" || fields[1] === "blob"
  )
  return {
    firstTreeOffset: Number(firstTree?.[4]),
    whole: commits.filter((fields) => fields.length === 5).map((fields) => fields[0]).sort(),
    deltified: commits.filter((fields) => fields.length > 5).map((fields) => fields[0]).sort()
  }
}

const scan = (pack: Buffer, chunkSize: number, maxBytes = 64 << 20) => {
  const scanner = new PackCommitScanner(maxBytes)
  const found: Array<ScannedCommit> = []
  for (let at = 0; at < pack.length; at += chunkSize) found.push(...scanner.push(pack.subarray(at, at + chunkSize)))
  found.push(...scanner.end())
  return { scanner, found }
}

describe("PackCommitScanner", () => {
  it("finds every commit a pack stores whole, with git's ids and bytes, however the pack is cut", () => {
    const dir = repository("plain", 40)
    const pack = packOf(dir)
    const stored = storedCommits(dir, pack)
    expect(stored.whole).toHaveLength(40)
    for (const chunkSize of [1, 7, 1000, 64 * 1024]) {
      const { found, scanner } = scan(pack, chunkSize)
      expect(scanner.done).toBe(true)
      expect(scanner.stopped).toBeUndefined()
      expect(found.map((commit) => commit.sha).sort()).toEqual(stored.whole)
    }
    // The scan ends at the first tree or blob: what follows is never read.
    const garbled = Buffer.from(pack)
    garbled.fill(0xff, stored.firstTreeOffset + 1)
    const head = scan(garbled, 512)
    expect([head.found.length, head.scanner.done, head.scanner.stopped]).toEqual([40, true, undefined])
    for (const commit of scan(pack, 4096).found) {
      expect(commit.object.equals(git(dir, ["cat-file", "commit", commit.sha]))).toBe(true)
    }
  })

  it("skips deltified commits (they are left to the walk) and still reads the commits after them", () => {
    const dir = repository("deltas", 6, "lorem ipsum dolor sit amet ".repeat(150))
    const pack = packOf(dir)
    const stored = storedCommits(dir, pack)
    expect(stored.deltified.length).toBeGreaterThan(0)
    expect(stored.whole.length).toBeGreaterThan(0)
    const { found, scanner } = scan(pack, 100)
    expect(scanner.done).toBe(true)
    expect(found.map((commit) => commit.sha).sort()).toEqual(stored.whole)
  })

  it("stops without throwing on corrupt, truncated, foreign or oversized input; found ids are the bytes' hashes", () => {
    const dir = repository("broken", 12)
    const pack = packOf(dir)
    const ids = new Set(storedCommits(dir, pack).whole)
    const cases: Record<string, Buffer> = {
      truncated: pack.subarray(0, 300),
      notAPack: Buffer.from("PACK garbage that is not a pack at all"),
      badVersion: Buffer.concat([Buffer.from("PACK"), Buffer.from([0, 0, 0, 9]), pack.subarray(8)])
    }
    // A flipped byte anywhere in the objects: the scan stops there or misses that object only.
    for (let at = 12; at < pack.length - 20; at += 97) {
      const corrupt = Buffer.from(pack)
      corrupt[at] ^= 0xff
      cases[`flip@${at}`] = corrupt
    }
    for (const [name, input] of Object.entries(cases)) {
      const { found, scanner } = scan(input, 333)
      if (name === "notAPack" || name === "badVersion") expect(scanner.stopped).toBe("malformed")
      if (name === "truncated") expect(scanner.done).toBe(false)
      // A found commit's id is always the hash of the bytes found (a flipped type bit can make a
      // "commit" of another object, whose id then names nothing the push's walk could list).
      for (const commit of found) {
        const hashed = createHash("sha1").update(`commit ${commit.object.length}\0`).update(commit.object).digest("hex")
        expect(commit.sha, name).toBe(hashed)
        if (ids.has(commit.sha)) {
          expect(commit.object.equals(git(dir, ["cat-file", "commit", commit.sha])), name).toBe(true)
        }
      }
    }
    const tooLarge = scan(pack, 100, 500).scanner
    expect(tooLarge.stopped).toBe("too large")
  })
})
