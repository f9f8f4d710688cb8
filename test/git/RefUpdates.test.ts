import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { ZERO_SHA } from "../../services/git/PktLine.ts"
import { RefUpdateCheck, type RefUpdateCheckFn, RefUpdates } from "../../services/git/RefUpdates.ts"
import { RepoCache } from "../../services/git/RepoCache.ts"
import { Repositories } from "../../services/git/Repositories.ts"
import { request, startApp } from "../support/app.ts"
import { createRepo, gitClient, pushedWorkTree } from "./gitClient.ts"

type Services = RefUpdates | RepoCache | Repositories
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly context: Context.Context<Services>
}>()("test/git/RefUpdatesApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, context: app.context as any }))
)

/** Server-side ref updates (what merges will do), with a hook that refuses one branch. */
const applyWith = (
  check: RefUpdateCheckFn,
  orgSlug: string,
  commands: ReadonlyArray<{ name: string; oldSha: string; newSha: string }>,
  atomic: boolean
) =>
  Effect.gen(function*() {
    const repos = yield* Repositories
    const cache = yield* RepoCache
    const updates = yield* RefUpdates
    const repo = Option.getOrThrow(yield* repos.find(orgSlug, "hooked"))
    return yield* cache.use(repo, (synced) =>
      updates.apply({ repo, dir: synced.dir, quarantine: undefined, commands, atomic, pusher: null }))
  }).pipe(Effect.provideService(RefUpdateCheck, check))

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("RefUpdates", (it) => {
  it.effect("asks the hook about every ref, applies the accepted ones, and all-or-nothing when atomic", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const org = yield* createRepo(baseUrl, { slug: "hooks", name: "hooked" })
      const git = yield* gitClient
      const { head } = yield* pushedWorkTree(git, org.url)

      const seen: Array<string> = []
      const check: RefUpdateCheckFn = ({ command }) =>
        Effect.sync(() => {
          seen.push(command.name)
          return command.name === "refs/heads/protected" ? "protected branch" : undefined
        })
      const create = (name: string) => ({ name, oldSha: ZERO_SHA, newSha: head })
      const commands = [create("refs/heads/protected"), create("refs/heads/free")]

      const atomic = yield* Effect.provide(applyWith(check, "hooks", commands, true), context)
      expect(atomic).toEqual([
        { name: "refs/heads/protected", ok: false, reason: "protected branch" },
        { name: "refs/heads/free", ok: false, reason: "atomic push failed" }
      ])
      const separate = yield* Effect.provide(applyWith(check, "hooks", commands, false), context)
      expect(separate).toEqual([
        { name: "refs/heads/protected", ok: false, reason: "protected branch" },
        { name: "refs/heads/free", ok: true }
      ])
      expect(seen).toEqual(["refs/heads/protected", "refs/heads/free", "refs/heads/protected", "refs/heads/free"])
      const branches = yield* request(`${baseUrl}/api/v1/code/repos/hooks/hooked/branches`, { token: org.key })
      expect(branches.body.branches.map((b: any) => b.name)).toEqual(["free", "main"])

      // A stale expected value loses the compare-and-swap; an unknown object is refused before anything moves.
      const stale = yield* Effect.provide(
        applyWith(check, "hooks", [{ name: "refs/heads/main", oldSha: "1".repeat(40), newSha: head }], false),
        context
      )
      expect(stale).toEqual([{ name: "refs/heads/main", ok: false, reason: "fetch first" }])
      const missing = yield* Effect.provide(
        applyWith(check, "hooks", [{ name: "refs/heads/ghost", oldSha: ZERO_SHA, newSha: "2".repeat(40) }], false),
        context
      ).pipe(Effect.flip)
      expect(missing._tag).toBe("PackRejected")
    }))
})
