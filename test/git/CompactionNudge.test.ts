import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { Repositories } from "../../services/git/Repositories.ts"
import { ServerCommitPacksBeforeCompaction } from "../../services/git/RepositoryProtocol.ts"
import { SuggestionCommits } from "../../services/pulls/SuggestionCommit.ts"
import { api, pushBranch, repoWithMain } from "../pulls/support.ts"
import { startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { gitClient } from "./gitClient.ts"

/**
 * Every ref update that stores a pack nudges the repository's compaction (the one ref-update
 * path), not only pushes and merges made through the HTTP handler: suggestion commits too.
 * Server-side commits compact from 3 packs here (32 by default) to see it happen.
 */
describe("compaction nudged from the ref-update path", () => {
  it.live(
    "a suggestion commit and a merge each compact the repository once packs piled up",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp(undefined, Context.make(ServerCommitPacksBeforeCompaction, 3))
        const git = yield* gitClient
        const { dir, repo } = yield* repoWithMain(git, app.baseUrl, "nudged", { "src/app.ts": "line 1\nline 2\n" })
        const head = yield* pushBranch(git, dir, "feature", [{ "other.txt": "x\n" }])
        const packs = Effect.map(
          app.sql<{ n: number }>`SELECT count(*)::int AS n FROM repo_packs WHERE repo_id = ${repo.id}`,
          (rows) => rows[0].n
        )
        // Two pushes, two packs: below the push threshold (8), nothing compacts.
        expect(yield* packs).toBe(2)

        const record = Option.getOrThrow(
          yield* Effect.provide(
            Effect.flatMap(Effect.service(Repositories), (repos) => repos.find("nudged", "r")),
            app.context as Context.Context<Repositories>
          )
        )
        const applied = yield* Effect.provide(
          Effect.flatMap(Effect.service(SuggestionCommits), (commits) =>
            commits.applySuggestion({
              repo: record,
              branch: "feature",
              expectedHeadSha: head,
              path: "src/app.ts",
              startLine: 2,
              endLine: 2,
              originalLines: ["line 2"],
              replacement: "line two\n",
              author: { name: "Sug Gester", email: "sug@example.com" },
              committer: { name: "Ap Plier", email: "applier@example.com" },
              message: "Apply suggestion from review"
            })),
          app.context as Context.Context<SuggestionCommits>
        )
        expect(applied.sha).toMatch(/^[0-9a-f]{40}$/)
        yield* eventually("compaction after the suggestion commit", packs, (n) => n === 1)

        yield* pushBranch(git, dir, "second", [{ "second.txt": "2\n" }])
        expect(yield* packs).toBe(2)
        const pulls = api(app.baseUrl, repo)
        const created = yield* pulls.create({ title: "Second", sourceBranch: "second" })
        expect(created.status).toBe(201)
        yield* pulls.settled(created.body.number)
        const merged = yield* pulls.merge(created.body.number)
        expect(merged.status, JSON.stringify(merged.body)).toBe(200)
        yield* eventually("compaction after the merge", packs, (n) => n === 1)
      }).pipe(Effect.scoped),
    120_000
  )
})
