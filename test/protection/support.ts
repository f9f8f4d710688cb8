import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { RepoRecord } from "../../services/git/Repositories.ts"
import { cloneUrl, type GitClient } from "../git/gitClient.ts"
import { adminToken, request } from "../support/app.ts"

const run = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.promise(() =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(command, args, { env })
      const out: Array<Buffer> = []
      const err: Array<Buffer> = []
      child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
      child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
      child.on("close", (code) =>
        resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }))
      child.stdin.end()
    })
  ).pipe(
    Effect.flatMap((result) =>
      result.code === 0
        ? Effect.succeed(result.stdout)
        : Effect.die(new Error(`${command} ${args.join(" ")} exited ${result.code}: ${result.stderr}`))
    )
  )

/**
 * A real passphrase-less signing key (ed25519 unless `algorithm` says e.g. "rsa2048") in a
 * temporary GNUPGHOME (its agent stopped and the folder removed with the test's scope): its
 * fingerprint and armored public key.
 */
export const gpgKey = (uid: string, algorithm = "ed25519") =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gpg-"))
      Fs.chmodSync(home, 0o700)
      const env = { PATH: process.env.PATH, GNUPGHOME: home, LANG: "C" }
      yield* run("gpg", ["--batch", "--passphrase", "", "--quick-gen-key", uid, algorithm, "sign", "never"], env)
      const listing = yield* run("gpg", ["--batch", "--with-colons", "--list-keys"], env)
      const fingerprint = listing.split("\n").find((line) => line.startsWith("fpr:"))!.split(":")[9]
      const armored = yield* run("gpg", ["--batch", "--armor", "--export", fingerprint], env)
      return { home, fingerprint, armored }
    }),
    (key) =>
      // Every component gpg may have started. The agent writes into its home as it exits, so
      // the folder is removed once its socket is gone (at most ~5 s), with retries on ENOTEMPTY.
      run("gpgconf", ["--kill", "all"], { PATH: process.env.PATH, GNUPGHOME: key.home }).pipe(
        Effect.ignore,
        Effect.andThen(Effect.promise(async () => {
          for (let i = 0; i < 50 && Fs.existsSync(Path.join(key.home, "S.gpg-agent")); i++) {
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
          Fs.rmSync(key.home, { recursive: true, force: true, maxRetries: 10 })
        }))
      )
  )
export type GpgTestKey = Effect.Success<ReturnType<typeof gpgKey>>

/** A binary detached signature of `payload` by `key`, made by gpg with `options` (e.g. a notation). */
export const gpgSign = (key: GpgTestKey, payload: Uint8Array, options: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const input = Path.join(key.home, `payload-${Math.random().toString(36).slice(2)}`)
    Fs.writeFileSync(input, payload)
    const env = { PATH: process.env.PATH, GNUPGHOME: key.home, LANG: "C" }
    yield* run("gpg", [
      "--batch",
      "--yes",
      ...options,
      "-u",
      key.fingerprint,
      "--detach-sign",
      "-o",
      `${input}.sig`,
      input
    ], env)
    return new Uint8Array(Fs.readFileSync(`${input}.sig`))
  })

/** Commits `files` in `dir` signed with `key` (or unsigned without one); returns the commit id. */
export const signedCommit = (
  git: GitClient,
  dir: string,
  files: Record<string, string>,
  message: string,
  key?: GpgTestKey
) =>
  Effect.gen(function*() {
    for (const [name, content] of Object.entries(files)) {
      Fs.mkdirSync(Path.dirname(Path.join(dir, name)), { recursive: true })
      Fs.writeFileSync(Path.join(dir, name), content)
    }
    yield* git.ok(["add", "-A"], { cwd: dir })
    if (key === undefined) {
      yield* git.ok(["commit", "-q", "-m", message], { cwd: dir })
    } else {
      git.env.GNUPGHOME = key.home
      yield* git.ok([
        "-c",
        "gpg.program=gpg",
        "-c",
        `user.signingkey=${key.fingerprint}`,
        "commit",
        "-q",
        "-S",
        "-m",
        message
      ], {
        cwd: dir
      })
    }
    return (yield* git.ok(["rev-parse", "HEAD"], { cwd: dir })).trim()
  })

/** Adds a user with `role` to the organization and returns a key of theirs and their clone URL. */
export const addMember = (
  baseUrl: string,
  org: string,
  username: string,
  role: "owner" | "admin" | "member" = "member",
  repo = "r"
) =>
  Effect.gen(function*() {
    const admin = { token: adminToken }
    const user = yield* request(`${baseUrl}/api/v1/admin/orgs/${org}/users`, {
      ...admin,
      method: "POST",
      body: { username, email: `${username}@example.com`, role }
    })
    if (user.status !== 201) throw new Error(`user: ${user.status} ${JSON.stringify(user.body)}`)
    const key = yield* request(`${baseUrl}/api/v1/admin/orgs/${org}/keys`, {
      ...admin,
      method: "POST",
      body: { username }
    })
    if (key.status !== 201) throw new Error(`key: ${key.status} ${JSON.stringify(key.body)}`)
    return {
      id: user.body.id as string,
      username,
      key: key.body.key as string,
      url: cloneUrl(baseUrl, org, repo, key.body.key)
    }
  })

/** Creates a protection rule through the API; dies unless it answers 201. */
export const createRule = (baseUrl: string, repo: { slug: string; name: string; key: string }, body: object) =>
  Effect.flatMap(
    request(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/branches/protection`, {
      method: "POST",
      token: repo.key,
      body
    }),
    (response) =>
      response.status === 201
        ? Effect.succeed(response.body as { id: string })
        : Effect.die(new Error(`rule: ${response.status} ${JSON.stringify(response.body)}`))
  )

/** The sha a branch has on the server (from the branch list), or undefined. */
export const branchSha = (baseUrl: string, repo: { slug: string; name: string; key: string }, branch: string) =>
  Effect.map(
    request(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/branches`, { token: repo.key }),
    (response) =>
      (response.body.branches as Array<{ name: string; commitSha: string }>).find((b) => b.name === branch)?.commitSha
  )

/** The `RepoRecord` of a repository made by `createRepo` (for calling services directly). */
export const recordOf = (repo: { id: string; org: { id: string }; slug: string; name: string }): RepoRecord => ({
  id: repo.id,
  orgId: repo.org.id,
  orgSlug: repo.slug,
  name: repo.name,
  slug: repo.name,
  visibility: "private",
  defaultBranch: "main",
  archived: false
})
