import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { gitClient } from "../git/gitClient.ts"
import { api, pushBranch, repoWithMain } from "../pulls/support.ts"
import { request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/** The app an AI test file runs against (one per file: each file runs in a worker of its own). */
export class AiApp extends Context.Service<AiApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/ai/AiApp"
) {
  static readonly layer = Layer.effect(AiApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))
}

/** Unique repository slugs per test process: `<prefix>-<pid>-<n>`. */
export const slugs = (prefix: string) => {
  let counter = 0
  return () => `${prefix}-${process.pid}-${++counter}`
}

/** What every captured log line is searched for (the key must never appear). */
export const logged: Array<string> = []
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream) as (...args: Array<any>) => boolean
  stream.write = ((chunk: any, ...rest: Array<any>) => {
    logged.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"))
    return write(chunk, ...rest)
  }) as typeof stream.write
}

export const FILE = "src/app.ts"
export const BASE = "export const a = 1\nexport const b = 2\nexport const c = 3\nexport const d = 4\n"
/** The feature changes line 2 and adds lines 5 and 6. */
export const FEATURE = "export const a = 1\nexport const b = eval(input)\nexport const c = 3\nexport const d = 4\n" +
  "export const e = 5\nexport const f = 6\n"

export const aiUrl = (baseUrl: string, repo: { slug: string; name: string }, tail: string) =>
  `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}${tail}`

/** A repository with a pull request from `feature` changing FILE; answers the pieces a test needs. */
export const pullWithChange = (baseUrl: string, slug: string, options?: { readonly open?: boolean }) =>
  Effect.gen(function*() {
    const git = yield* gitClient
    const { dir, repo } = yield* repoWithMain(git, baseUrl, slug, { [FILE]: BASE, "README.md": "hi\n" })
    const head = yield* pushBranch(git, dir, "feature", [{ [FILE]: FEATURE, "package-lock.json": "{}\n" }])
    const pulls = api(baseUrl, repo)
    const settings = (body: Record<string, unknown>, token = repo.key) =>
      request(aiUrl(baseUrl, repo, "/ai/settings"), { method: "PATCH", token, body })
    const open = () =>
      Effect.map(
        pulls.create({ title: "Feature", body: "Adds things", sourceBranch: "feature" }),
        (created) => {
          if (created.status !== 201) throw new Error(`pull: ${created.status} ${JSON.stringify(created.body)}`)
          return created.body.number as number
        }
      )
    const number = options?.open === false ? 0 : yield* open()
    const review = (n = number) => request(aiUrl(baseUrl, repo, `/pulls/${n}/ai-review`), { token: repo.key })
    const trigger = (n = number) =>
      request(aiUrl(baseUrl, repo, `/pulls/${n}/ai-review`), { method: "POST", token: repo.key })
    /** Waits until the latest review (of `id` when given) is completed or failed. */
    const finished = (id?: string, n = number) =>
      eventually(
        "AI review finished",
        review(n),
        (r) =>
          r.status === 200 && (id === undefined || r.body.id === id) &&
          (r.body.status === "completed" || r.body.status === "failed"),
        { timeoutMs: 60_000 }
      )
    return { git, dir, repo, pulls, head, number, settings, open, review, trigger, finished }
  })
