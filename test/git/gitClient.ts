import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { bootstrapOrg, request } from "../support/app.ts"

export interface GitResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * A real `git` client isolated from the machine: its own HOME, no system or global config,
 * no credential helper, never a prompt. Its temp folder goes with the test's scope.
 */
export const gitClient = Effect.acquireRelease(
  Effect.sync(() => {
    const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-git-client-"))
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: Path.join(home, ".gitconfig"),
      GIT_TERMINAL_PROMPT: "0",
      GIT_ASKPASS: "/bin/false",
      GIT_AUTHOR_NAME: "Ada Lovelace",
      GIT_AUTHOR_EMAIL: "ada@example.com",
      GIT_COMMITTER_NAME: "Ada Lovelace",
      GIT_COMMITTER_EMAIL: "ada@example.com",
      LANG: "C"
    }
    Fs.writeFileSync(
      Path.join(home, ".gitconfig"),
      "[credential]\n\thelper =\n[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"
    )
    /** Runs git in `cwd` (default: the client's home) and returns what it printed. */
    const run = (args: ReadonlyArray<string>, options?: { cwd?: string; input?: string | Buffer }) =>
      Effect.promise(() =>
        new Promise<GitResult>((resolve) => {
          const child = spawn("git", ["-c", "credential.helper=", ...args], { cwd: options?.cwd ?? home, env })
          const out: Array<Buffer> = []
          const err: Array<Buffer> = []
          child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
          child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
          child.on("close", (code) =>
            resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }))
          child.stdin.end(options?.input)
        })
      )
    /** Like `run`, but dies with git's output unless it exits 0. */
    const ok = (args: ReadonlyArray<string>, options?: { cwd?: string; input?: string | Buffer }) =>
      Effect.flatMap(run(args, options), (result) =>
        result.code === 0
          ? Effect.succeed(result.stdout)
          : Effect.die(new Error(`git ${args.join(" ")} exited ${result.code}: ${result.stderr}`)))
    const dir = (name: string) => Path.join(home, name)
    return { home, env, run, ok, dir }
  }),
  (client) => Effect.sync(() => Fs.rmSync(client.home, { recursive: true, force: true }))
)

export type GitClient = Effect.Success<typeof gitClient>

/** `http://git:<key>@host/<org>/<repo>.git`, or without credentials. */
export const cloneUrl = (baseUrl: string, org: string, repo: string, key?: string) => {
  const url = new URL(`${baseUrl}/${org}/${repo}.git`)
  if (key !== undefined) {
    url.username = "git"
    url.password = key
  }
  return url.toString()
}

/** Writes files (path → content) under `dir`, creating folders. */
export const writeFiles = (dir: string, files: Record<string, string | Buffer>) =>
  Effect.sync(() => {
    for (const [name, content] of Object.entries(files)) {
      Fs.mkdirSync(Path.dirname(Path.join(dir, name)), { recursive: true })
      Fs.writeFileSync(Path.join(dir, name), content)
    }
  })

/** Writes files in the work tree `dir`, commits them, and returns the new commit's id. */
export const commit = (git: GitClient, dir: string, files: Record<string, string | Buffer>, message: string) =>
  Effect.gen(function*() {
    yield* writeFiles(dir, files)
    yield* git.ok(["add", "-A"], { cwd: dir })
    yield* git.ok(["commit", "-q", "-m", message], { cwd: dir })
    return (yield* git.ok(["rev-parse", "HEAD"], { cwd: dir })).trim()
  })

/** A fresh work tree `name` with one commit (`a.txt`) pushed to `url` as `main`. */
export const pushedWorkTree = (git: GitClient, url: string, name = "work") =>
  Effect.gen(function*() {
    const dir = git.dir(name)
    yield* git.ok(["init", "-q", dir])
    const head = yield* commit(git, dir, { "a.txt": "a\n" }, "a")
    yield* git.ok(["push", "-q", url, "main"], { cwd: dir })
    return { dir, head }
  })

/** An organization with an owner's key and one repository in it, created through the API. */
export const createRepo = (
  baseUrl: string,
  options: { slug: string; plan?: string; name?: string; visibility?: string }
) =>
  Effect.gen(function*() {
    const org = yield* bootstrapOrg(baseUrl, { slug: options.slug, plan: options.plan ?? "enterprise" })
    const name = options.name ?? "r"
    const created = yield* request(`${baseUrl}/api/v1/code/repos`, {
      method: "POST",
      token: org.key,
      body: { name, visibility: options.visibility ?? "private" }
    })
    if (created.status !== 201) throw new Error(`repo: ${created.status} ${JSON.stringify(created.body)}`)
    return {
      ...org,
      slug: options.slug,
      name,
      id: created.body.id as string,
      url: cloneUrl(baseUrl, options.slug, name, org.key),
      anonymousUrl: cloneUrl(baseUrl, options.slug, name)
    }
  })
