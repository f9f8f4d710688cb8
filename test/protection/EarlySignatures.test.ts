import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pkt } from "../../services/git/PktLine.ts"
import { earlySignatureStats } from "../../services/protection/EarlySignatures.ts"
import { createRepo, type GitClient, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { addMember, branchSha, createRule, gpgKey, type GpgTestKey, signedCommit } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/protection/EarlyApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0

/** A repository whose `main` requires signed commits, and a member `bob` whose key is registered. */
const signedRepo = Effect.gen(function*() {
  const { baseUrl } = yield* TestApp
  const git = yield* gitClient
  const repo = yield* createRepo(baseUrl, { slug: `es-${process.pid}-${++counter}`, plan: "enterprise" })
  const { head } = yield* pushedWorkTree(git, repo.url, "owner")
  const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
  const bobKey = yield* gpgKey("Bob <bob@example.com>")
  const registered = yield* request(`${baseUrl}/api/v1/user/gpg-keys`, {
    method: "POST",
    token: bob.key,
    body: { armoredPublicKey: bobKey.armored }
  })
  expect(registered.status).toBe(201)
  yield* createRule(baseUrl, repo, { branchPattern: "main", requirePullRequest: false, requireSignedCommits: true })
  const dir = git.dir(`bob-${counter}`)
  yield* git.ok(["clone", "-q", bob.url, dir])
  return { baseUrl, git, repo, head, bob, bobKey, dir }
})

/** `count` commits signed by `key`; a long, shared message body makes git store most of them as deltas. */
const signedCommits = (git: GitClient, dir: string, key: GpgTestKey, count: number, body = "") =>
  Effect.gen(function*() {
    const shas: Array<string> = []
    for (let i = 0; i < count; i++) {
      shas.push(yield* signedCommit(git, dir, { [`f${i % 4}.txt`]: `${i}\n` }, `signed ${i}${body}`, key))
    }
    return shas
  })

/** A receive-pack request by hand: one command, then `pack`; the answer as text. */
const rawPush = (baseUrl: string, repo: { slug: string; name: string }, key: string, command: string, pack: Buffer) =>
  Effect.promise(async () => {
    const body = Buffer.concat([pkt(`${command}\0report-status side-band-64k\n`), Buffer.from("0000"), pack])
    const response = await fetch(`${baseUrl}/${repo.slug}/${repo.name}.git/git-receive-pack`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`x:${key}`).toString("base64")}`,
        "content-type": "application/x-git-receive-pack-request"
      },
      body
    })
    return Buffer.from(await response.arrayBuffer()).toString("latin1")
  })

/** The pack `git pack-objects` makes of `tip` without `base`, and how many of its commits are deltas. */
const packOf = (git: GitClient, dir: string, tip: string, base: string) =>
  Effect.gen(function*() {
    const out = Path.join(dir, ".git", "early-test")
    const hash =
      (yield* git.ok(["pack-objects", "--revs", "--window=50", out], { cwd: dir, input: `${tip}\n^${base}\n` }))
        .trim()
    const packPath = `${out}-${hash}.pack`
    const listing = yield* git.ok(["verify-pack", "-v", packPath], { cwd: dir })
    const deltified = listing.split("\n").map((line) => line.split(/\s+/)).filter((f) =>
      f[1] === "commit" && f.length > 5
    )
    return { pack: Fs.readFileSync(packPath), deltified: deltified.length }
  })

const refusal = (sha: string) =>
  `protected branch: commit ${sha.slice(0, 7)} is not signed with a GPG key registered in this organization`

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })(
  "Signatures checked while the pack is indexed",
  (it) => {
    it.effect("a signed push is verified from its pack; unsigned, wrong-key and forged commits are refused as before", () =>
      Effect.gen(function*() {
        const { baseUrl, bobKey, dir, git, head, repo } = yield* signedRepo
        const strayKey = yield* gpgKey("Stray <stray@example.com>")
        const refusedWith = (sha: string) =>
          Effect.gen(function*() {
            const pushed = yield* git.run(["push", "origin", "main"], { cwd: dir })
            expect(pushed.code).not.toBe(0)
            expect(pushed.stderr).toContain(refusal(sha))
            expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)
            yield* git.ok(["reset", "-q", "--hard", head], { cwd: dir })
          })

        yield* signedCommits(git, dir, bobKey, 5)
        yield* refusedWith(yield* signedCommit(git, dir, { "u.txt": "u\n" }, "unsigned"))
        yield* signedCommits(git, dir, bobKey, 5)
        yield* refusedWith(yield* signedCommit(git, dir, { "s.txt": "s\n" }, "stray key", strayKey))
        // A registered key's signature over other content (the message changed afterwards).
        const genuine = (yield* signedCommits(git, dir, bobKey, 5)).at(-1)!
        const raw = yield* git.ok(["cat-file", "commit", genuine], { cwd: dir })
        const forged = (yield* git.ok(["hash-object", "-t", "commit", "-w", "--stdin"], {
          cwd: dir,
          input: raw.replace("signed 4", "forged 4")
        })).trim()
        yield* git.ok(["reset", "-q", "--hard", forged], { cwd: dir })
        yield* refusedWith(forged)

        const before = earlySignatureStats.verified
        const shas = yield* signedCommits(git, dir, bobKey, 20)
        yield* git.ok(["push", "origin", "main"], { cwd: dir })
        expect(yield* branchSha(baseUrl, repo, "main")).toBe(shas.at(-1))
        expect(earlySignatureStats.verified - before).toBe(20)
      }))

    it.effect("deltified commits in the pack are verified after the walk: genuine ones pass, a forged one is refused", () =>
      Effect.gen(function*() {
        const { baseUrl, bob, bobKey, dir, git, head, repo } = yield* signedRepo
        const body = `\n\n${"lorem ipsum dolor sit amet ".repeat(150)}`
        const genuine = yield* signedCommits(git, dir, bobKey, 6, body)
        const tip = genuine.at(-1)!
        const raw = yield* git.ok(["cat-file", "commit", tip], { cwd: dir })
        const forged = (yield* git.ok(["hash-object", "-t", "commit", "-w", "--stdin"], {
          cwd: dir,
          input: raw.replace("lorem", "LOREM")
        })).trim()

        const forgedPack = yield* packOf(git, dir, forged, head)
        expect(forgedPack.deltified).toBeGreaterThan(0)
        const refused = yield* rawPush(baseUrl, repo, bob.key, `${head} ${forged} refs/heads/main`, forgedPack.pack)
        expect(refused).toContain("unpack ok")
        expect(refused).toContain(`ng refs/heads/main ${refusal(forged)}`)
        expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)

        const genuinePack = yield* packOf(git, dir, tip, head)
        expect(genuinePack.deltified).toBeGreaterThan(0)
        const before = earlySignatureStats.verified
        const accepted = yield* rawPush(baseUrl, repo, bob.key, `${head} ${tip} refs/heads/main`, genuinePack.pack)
        expect(accepted).toContain("ok refs/heads/main")
        expect(yield* branchSha(baseUrl, repo, "main")).toBe(tip)
        // Only the commits stored whole were verified early.
        expect(earlySignatureStats.verified - before).toBe(6 - genuinePack.deltified)
      }))

    it.effect("a corrupt or truncated pack into a branch requiring signatures is still rejected by index-pack", () =>
      Effect.gen(function*() {
        const { baseUrl, bob, bobKey, dir, git, head, repo } = yield* signedRepo
        const tip = (yield* signedCommits(git, dir, bobKey, 20)).at(-1)!
        const { pack } = yield* packOf(git, dir, tip, head)
        const command = `${head} ${tip} refs/heads/main`
        const corrupt = Buffer.from(pack)
        corrupt[Math.floor(corrupt.length / 2)] ^= 0xff
        for (const body of [corrupt, pack.subarray(0, pack.length - 30), Buffer.from("PACK garbage")]) {
          const answer = yield* rawPush(baseUrl, repo, bob.key, command, body)
          expect(answer).not.toContain("unpack ok")
          expect(answer).toContain("ng refs/heads/main unpacker error")
          expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)
        }
        const good = yield* rawPush(baseUrl, repo, bob.key, command, pack)
        expect(good).toContain("ok refs/heads/main")
        expect(yield* branchSha(baseUrl, repo, "main")).toBe(tip)
      }))

    it.effect("a push no signed-commits rule applies to reads nothing from its pack", () =>
      Effect.gen(function*() {
        const { baseUrl, bobKey, dir, git, repo } = yield* signedRepo
        const shas = yield* signedCommits(git, dir, bobKey, 20)
        const before = earlySignatureStats.verified
        yield* git.ok(["push", "origin", "main:refs/heads/topic"], { cwd: dir })
        expect(yield* branchSha(baseUrl, repo, "topic")).toBe(shas.at(-1))
        expect(earlySignatureStats.verified).toBe(before)
      }))
  }
)
