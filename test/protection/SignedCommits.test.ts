import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { parseWalk } from "../../services/git/NewCommits.ts"
import { dearmor, splitSignature } from "../../services/protection/CommitSignatures.ts"
import { verifySignatures } from "../../services/protection/SignatureCheck.ts"
import { signatureWorkerStats } from "../../services/protection/SignatureWorkers.ts"
import { BranchRules } from "../../services/pulls/BranchRules.ts"
import { createRepo, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { addMember, branchSha, createRule, gpgKey, recordOf, signedCommit } from "./support.ts"

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly context: Context.Context<never>
}>()("test/protection/SignedApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, context: app.context as Context.Context<never> }))
)

let counter = 0

const registerKey = (baseUrl: string, token: string, armored: string) =>
  Effect.flatMap(
    request(`${baseUrl}/api/v1/user/gpg-keys`, { method: "POST", token, body: { armoredPublicKey: armored } }),
    (response) =>
      response.status === 201 ? Effect.succeed(response.body) : Effect.die(new Error(JSON.stringify(response.body)))
  )

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("Signed commits", (it) => {
  it.effect("a push's walk rebuilds commit objects byte for byte (the fast path of signature checks)", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const key = yield* gpgKey("Walk <walk@example.com>")
      const dir = git.dir("walk")
      yield* git.ok(["init", "-q", dir])
      const shas = [
        yield* signedCommit(git, dir, { "a.txt": "a\n" }, "plain", key),
        yield* signedCommit(git, dir, { "b.txt": "b\n" }, "subject\n\nbody line\n\n- item", key),
        yield* signedCommit(git, dir, { "c.txt": "c\n" }, "unsigned")
      ]
      const out = yield* git.ok(["rev-list", "--parents", "--header", "HEAD"], { cwd: dir })
      const walked = parseWalk(Buffer.from(out, "utf8"))
      expect(walked.map((c) => c.sha).reverse()).toEqual(shas)
      for (const commit of walked) {
        expect(commit.object.toString("utf8")).toBe(yield* git.ok(["cat-file", "commit", commit.sha], { cwd: dir }))
      }
      expect(walked.map((c) => c.parents.length)).toEqual([1, 1, 0])
    }))

  it.effect("a signature is read as exactly one signature packet, in either header format; anything else fails", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const key = yield* gpgKey("Packet <packet@example.com>")
      const dir = git.dir("packet")
      yield* git.ok(["init", "-q", dir])
      yield* signedCommit(git, dir, { "a.txt": "a\n" }, "signed", key)
      const split = splitSignature(Buffer.from(yield* git.ok(["cat-file", "commit", "HEAD"], { cwd: dir }), "utf8"))!
      const packet = Buffer.from(dearmor(split.signature)!)
      // gpg writes an old-format header with a one-octet length (RFC 9580 §4.2.2).
      expect([packet[0], packet[1] + 2]).toEqual([0x88, packet.length])
      const body = packet.subarray(2)
      const variants = {
        gpg: packet,
        newFormat: Buffer.concat([Buffer.from([0xc2, body.length]), body]),
        newFormatFiveOctets: Buffer.concat([Buffer.from([0xc2, 255, 0, 0, 0, body.length]), body]),
        oldFormatTwoOctets: Buffer.concat([Buffer.from([0x89, 0, body.length]), body]),
        trailingByte: Buffer.concat([packet, Buffer.from([0])]),
        truncated: packet.subarray(0, packet.length - 1),
        partialLength: Buffer.concat([Buffer.from([0xc2, 0xe0 + 6]), body]),
        indeterminateLength: Buffer.concat([Buffer.from([0x8b]), body]),
        notASignature: Buffer.concat([Buffer.from([0x8c, body.length]), body]),
        twoSignatures: Buffer.concat([packet, packet])
      }
      const verdicts = yield* Effect.promise(() =>
        verifySignatures(
          Object.values(variants).map((signature) => ({ payload: split.payload, signature })),
          [key.armored]
        )
      )
      expect(Object.fromEntries(Object.keys(variants).map((name, i) => [name, verdicts[i]]))).toEqual({
        gpg: true,
        newFormat: true,
        newFormatFiveOctets: true,
        oldFormatTwoOctets: true,
        trailingByte: false,
        truncated: false,
        partialLength: false,
        indeterminateLength: false,
        notASignature: false,
        twoSignatures: false
      })
      const tampered = Buffer.concat([split.payload, Buffer.from("x")])
      expect(yield* Effect.promise(() => verifySignatures([{ payload: tampered, signature: packet }], [key.armored])))
        .toEqual([false])
    }))

  it.effect("GPG keys: register, list, read, refuse junk and duplicates, delete; another user's key is a 404", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: `sk-${process.pid}-${++counter}` })
      const other = yield* addMember(baseUrl, repo.slug, `other-${repo.slug}`)
      const key = yield* gpgKey("Ada <ada@example.com>")
      const created = yield* registerKey(baseUrl, repo.key, key.armored)
      expect(created.fingerprint).toBe(key.fingerprint)
      expect(created.keyId).toBe(key.fingerprint.slice(-16))
      expect(created.emails).toEqual(["ada@example.com"])
      expect(created.id).toMatch(/^gpg_/)
      const listed = yield* request(`${baseUrl}/api/v1/user/gpg-keys`, { token: repo.key })
      expect(listed.body.count).toBe(1)
      const duplicate = yield* request(`${baseUrl}/api/v1/user/gpg-keys`, {
        method: "POST",
        token: repo.key,
        body: { armoredPublicKey: key.armored }
      })
      expect(duplicate.status).toBe(409)
      const junk = yield* request(`${baseUrl}/api/v1/user/gpg-keys`, {
        method: "POST",
        token: repo.key,
        body: { armoredPublicKey: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nnope\n-----END PGP PUBLIC KEY BLOCK-----" }
      })
      expect(junk.status).toBe(400)
      expect(junk.body.error).toBe("validation_error")
      const foreign = yield* request(`${baseUrl}/api/v1/user/gpg-keys/${created.id}`, { token: other.key })
      expect(foreign.status).toBe(404)
      const removedByOther = yield* request(`${baseUrl}/api/v1/user/gpg-keys/${created.id}`, {
        method: "DELETE",
        token: other.key
      })
      expect(removedByOther.status).toBe(404)
      const removed = yield* request(`${baseUrl}/api/v1/user/gpg-keys/${created.id}`, {
        method: "DELETE",
        token: repo.key
      })
      expect(removed.status).toBe(204)
      expect((yield* request(`${baseUrl}/api/v1/user/gpg-keys`, { token: repo.key })).body.count).toBe(0)
    }))

  it.effect("requireSignedCommits: commits signed by a member's registered key pass; unsigned, unregistered-key and other-organization-key commits are refused", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: `sc-${process.pid}-${++counter}`, plan: "enterprise" })
      const { head } = yield* pushedWorkTree(git, repo.url, "owner")
      const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
      const outsider = yield* createRepo(baseUrl, { slug: `so-${process.pid}-${++counter}` })
      const [bobKey, strayKey, outsiderKey] = yield* Effect.all([
        gpgKey("Bob <bob@example.com>"),
        gpgKey("Stray <stray@example.com>"),
        gpgKey("Outsider <out@example.com>")
      ], { concurrency: 3 })
      yield* registerKey(baseUrl, bob.key, bobKey.armored)
      yield* registerKey(baseUrl, outsider.key, outsiderKey.armored)
      yield* createRule(baseUrl, repo, { branchPattern: "main", requirePullRequest: false, requireSignedCommits: true })
      const dir = git.dir("bob")
      yield* git.ok(["clone", "-q", bob.url, dir])

      const refusedWith = (sha: string) =>
        Effect.gen(function*() {
          const pushed = yield* git.run(["push", "origin", "main"], { cwd: dir })
          expect(pushed.code).not.toBe(0)
          expect(pushed.stderr).toContain(
            `protected branch: commit ${sha.slice(0, 7)} is not signed with a GPG key registered in this organization`
          )
          expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)
          yield* git.ok(["reset", "-q", "--hard", head], { cwd: dir })
        })

      yield* refusedWith(yield* signedCommit(git, dir, { "u.txt": "u\n" }, "unsigned"))
      yield* refusedWith(yield* signedCommit(git, dir, { "s.txt": "s\n" }, "stray key", strayKey))
      yield* refusedWith(yield* signedCommit(git, dir, { "o.txt": "o\n" }, "outsider key", outsiderKey))
      // A registered key's signature over other content (the message changed afterwards).
      const genuine = yield* signedCommit(git, dir, { "t.txt": "t\n" }, "genuine", bobKey)
      const raw = yield* git.ok(["cat-file", "commit", genuine], { cwd: dir })
      const forged = (yield* git.ok(["hash-object", "-t", "commit", "-w", "--stdin"], {
        cwd: dir,
        input: raw.replace("genuine", "forged")
      })).trim()
      yield* git.ok(["reset", "-q", "--hard", forged], { cwd: dir })
      yield* refusedWith(forged)
      // One unsigned commit among signed ones is enough to refuse.
      yield* signedCommit(git, dir, { "1.txt": "1\n" }, "signed 1", bobKey)
      yield* refusedWith(yield* signedCommit(git, dir, { "2.txt": "2\n" }, "unsigned 2"))

      const first = yield* signedCommit(git, dir, { "1.txt": "1\n" }, "signed 1", bobKey)
      const second = yield* signedCommit(git, dir, { "2.txt": "2\n" }, "signed 2", bobKey)
      // A message git's walk shows differently (blank lines, trailing spaces) still verifies.
      const odd = yield* signedCommit(git, dir, { "3.txt": "3\n" }, "odd  \n\n    body \n\n\nend", bobKey)
      yield* git.ok(["push", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(odd)

      // The merge engine's question gives the same answers.
      const rules = Context.get(context, BranchRules)
      const record = recordOf(repo)
      const stray = yield* signedCommit(git, dir, { "5.txt": "5\n" }, "stray", strayKey)
      const unsigned = yield* signedCommit(git, dir, { "4.txt": "4\n" }, "unsigned")
      const gitDir = `${dir}/.git`
      expect(
        yield* rules.unsignedCommits({ repo: record, gitDir, env: {}, shas: [first, second, odd, stray, unsigned] })
      )
        .toEqual([stray, unsigned])
    }))

  it.effect("a push of many signed commits is verified on worker threads: a forged tip is refused, the genuine one passes; a removed key or rule applies to the next push", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: `sw-${process.pid}-${++counter}`, plan: "enterprise" })
      const { head } = yield* pushedWorkTree(git, repo.url, "owner")
      const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
      const bobKey = yield* gpgKey("Bob <bob@example.com>")
      const registered = yield* registerKey(baseUrl, bob.key, bobKey.armored)
      const rule = yield* createRule(baseUrl, repo, {
        branchPattern: "main",
        requirePullRequest: false,
        requireSignedCommits: true
      })
      const dir = git.dir("bob-many")
      yield* git.ok(["clone", "-q", bob.url, dir])
      let genuine = head
      for (let i = 0; i < 24; i++) {
        genuine = yield* signedCommit(git, dir, { [`f${i % 5}.txt`]: `${i}\n` }, `genuine ${i}`, bobKey)
      }
      const raw = yield* git.ok(["cat-file", "commit", genuine], { cwd: dir })
      const forged = (yield* git.ok(["hash-object", "-t", "commit", "-w", "--stdin"], {
        cwd: dir,
        input: raw.replace("genuine 23", "forged 23")
      })).trim()
      yield* git.ok(["reset", "-q", "--hard", forged], { cwd: dir })
      const answeredBefore = signatureWorkerStats.answered
      const refused = yield* git.run(["push", "origin", "main"], { cwd: dir })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain(
        `protected branch: commit ${forged.slice(0, 7)} is not signed with a GPG key registered in this organization`
      )
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)
      expect(signatureWorkerStats.answered).toBeGreaterThan(answeredBefore)

      yield* git.ok(["reset", "-q", "--hard", genuine], { cwd: dir })
      const answeredForGenuine = signatureWorkerStats.answered
      yield* git.ok(["push", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(genuine)
      expect(signatureWorkerStats.answered).toBeGreaterThan(answeredForGenuine)

      // Nothing is cached between pushes: a removed key refuses the very next push, a removed rule lets it in.
      const removedKey = yield* request(`${baseUrl}/api/v1/user/gpg-keys/${registered.id}`, {
        method: "DELETE",
        token: bob.key
      })
      expect(removedKey.status).toBe(204)
      const next = yield* signedCommit(git, dir, { "next.txt": "next\n" }, "next", bobKey)
      const unregistered = yield* git.run(["push", "origin", "main"], { cwd: dir })
      expect(unregistered.code).not.toBe(0)
      expect(unregistered.stderr).toContain(`protected branch: commit ${next.slice(0, 7)} is not signed`)
      const removedRule = yield* request(
        `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/branches/protection/${rule.id}`,
        { method: "DELETE", token: repo.key }
      )
      expect(removedRule.status).toBe(204)
      yield* git.ok(["push", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)
    }))
})
