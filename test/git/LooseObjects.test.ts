import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { rollUp } from "../../services/git/Compaction.ts"
import { writeLooseCommit } from "../../services/git/LooseCommit.ts"
import { packLooseObjects } from "../../services/git/LoosePack.ts"

const env = { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: Os.tmpdir() }
const git = (gitDir: string, args: ReadonlyArray<string>, input?: string) =>
  execFileSync("git", ["--git-dir", gitDir, ...args], { env, input, encoding: "utf8" })

const bareRepo = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-loose-"))
  git(Path.join(dir, "r.git"), ["init", "-q", "--bare"])
  return { dir, gitDir: Path.join(dir, "r.git") }
}

const looseShas = (objects: string) =>
  Fs.readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d)).flatMap((d) =>
    Fs.readdirSync(Path.join(objects, d)).map((f) => `${d}${f}`)
  )

describe("objects written in process", () => {
  it("packs loose objects into a pack git reads, with the index git itself would write", async () => {
    const { dir, gitDir } = bareRepo()
    const blob = git(gitDir, ["hash-object", "-w", "--stdin"], "line\n".repeat(20_000)).trim()
    const tree = git(gitDir, ["mktree"], `100644 blob ${blob}\tbig.txt\n`).trim()
    const objects = Path.join(gitDir, "objects")
    const commit = await writeLooseCommit(objects, {
      tree,
      parents: [],
      message: "First (#1)\n\nBody with ünïcode",
      author: { name: "Ann Author", email: "ann@example.com", date: "2026-01-02T03:04:05.678+01:30" },
      committer: { name: "Merger", email: "merger@example.com", date: "2026-01-02T05:00:00Z" }
    })
    expect(commit).toMatch(/^[0-9a-f]{40}$/)
    expect(git(gitDir, ["log", "-1", "--format=%an|%ae|%aI|%cn|%cI|%T|%B", commit!]).trim()).toBe(
      `Ann Author|ann@example.com|2026-01-02T03:04:05+01:30|Merger|2026-01-02T05:00:00+00:00|${tree}|First (#1)\n\nBody with ünïcode`
    )

    const shas = looseShas(objects)
    const packed = await packLooseObjects(objects, shas, Path.join(dir, "out"))
    expect(packed.objects).toBe(3)
    expect(git(gitDir, ["verify-pack", packed.idxPath])).toBe("")
    // git's own index of the same pack is byte for byte the one written here.
    Fs.copyFileSync(packed.packPath, Path.join(dir, "copy.pack"))
    git(gitDir, ["index-pack", "-o", Path.join(dir, "copy.idx"), Path.join(dir, "copy.pack")])
    expect(Fs.readFileSync(Path.join(dir, "copy.idx")).equals(Fs.readFileSync(packed.idxPath))).toBe(true)
    // Named by its checksum, as git names packs.
    expect(packed.name).toBe(`pack-${Fs.readFileSync(packed.packPath).subarray(-20).toString("hex")}`)
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("leaves identities git would clean up to git commit-tree", async () => {
    const { dir, gitDir } = bareRepo()
    const objects = Path.join(gitDir, "objects")
    const input = (name: string, date?: string) => ({
      tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
      parents: [],
      message: "m",
      author: { name, email: "a@example.com", date },
      committer: { name: "Merger", email: "merger@example.com", date: "2026-01-02T05:00:00Z" }
    })
    expect(await writeLooseCommit(objects, input(" padded ", "2026-01-02T05:00:00Z"))).toBeUndefined()
    expect(await writeLooseCommit(objects, input("a <b>", "2026-01-02T05:00:00Z"))).toBeUndefined()
    expect(await writeLooseCommit(objects, input("Ann", undefined))).toBeUndefined()
    expect(looseShas(objects)).toEqual([])
    Fs.rmSync(dir, { recursive: true, force: true })
  })
})

describe("compaction's geometric split", () => {
  const packs = (...bytes: Array<number>) => bytes.map((b, i) => ({ name: `p${i}`, bytes: b }))

  it("rolls up the small packs and leaves a big one alone", () => {
    expect(rollUp(packs(1_000_000, 10, 12, 9, 11)).sort()).toEqual(["p1", "p2", "p3", "p4"])
  })

  it("takes a larger pack too when it is under twice the rolled-up total", () => {
    expect(rollUp(packs(1_000_000, 70, 10, 10, 10, 10)).sort()).toEqual(["p1", "p2", "p3", "p4", "p5"])
  })

  it("rolls up nothing when the packs already grow geometrically, everything when all are alike", () => {
    expect(rollUp(packs(1, 4, 16, 64))).toEqual([])
    expect(rollUp(packs(3, 3, 3, 3)).sort()).toEqual(["p0", "p1", "p2", "p3"])
  })
})
