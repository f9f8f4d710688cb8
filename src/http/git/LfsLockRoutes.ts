import { Effect, Layer, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { LfsError } from "../../../services/git/Lfs.ts"
import { LfsLocks } from "../../../services/git/LfsLocks.ts"
import { authorizeGit } from "./GitAuth.ts"
import { answered, bodyAs, lfsJson, params } from "./LfsResponses.ts"

const Page = {
  cursor: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.Int)
}
const CreateLock = Schema.Struct({ path: Schema.String, ref: Schema.optional(Schema.Unknown) })
const VerifyLocks = Schema.Struct({ ...Page, ref: Schema.optional(Schema.Unknown) })
const Unlock = Schema.Struct({ force: Schema.optional(Schema.Boolean), ref: Schema.optional(Schema.Unknown) })

const cursorOf = (cursor: string | undefined) => {
  const offset = Number(cursor ?? 0)
  return Number.isInteger(offset) && offset >= 0 ? offset : 0
}

/** The writer's user: locking needs a key (write access never comes anonymously). */
const writer = (request: Parameters<typeof authorizeGit>[0], org: string, repo: string) =>
  Effect.flatMap(authorizeGit(request, org, repo, "write"), (access) =>
    access.principal === null
      ? Effect.fail(new LfsError({ status: 401, message: "Authentication required" }))
      : Effect.succeed({ repo: access.repo, userId: access.principal.user.id }))

const create = HttpRouter.add("POST", "/:org/:repo/info/lfs/locks", (request) =>
  answered(Effect.gen(function*() {
    const { org, repo } = yield* params
    const { repo: record, userId } = yield* writer(request, org, repo)
    const body = yield* bodyAs(CreateLock)
    const result = yield* (yield* LfsLocks).create(record, userId, body.path).pipe(Effect.result)
    return result._tag === "Success"
      ? lfsJson({ lock: result.success }, 201)
      : result.failure instanceof LfsError
      ? yield* result.failure
      : lfsJson({ lock: result.failure.lock, message: "already created lock" }, 409)
  })))

const list = HttpRouter.add("GET", "/:org/:repo/info/lfs/locks", (request) =>
  answered(Effect.gen(function*() {
    const { org, repo } = yield* params
    const access = yield* authorizeGit(request, org, repo, "read")
    const query = new URL(request.url, "http://x").searchParams
    const page = yield* (yield* LfsLocks).list(access.repo, {
      path: query.get("path") ?? undefined,
      id: query.get("id") ?? undefined,
      cursor: cursorOf(query.get("cursor") ?? undefined),
      limit: Number(query.get("limit") ?? 100) || 100
    })
    return lfsJson(page)
  })))

const verify = HttpRouter.add(
  "POST",
  "/:org/:repo/info/lfs/locks/verify",
  (request) =>
    answered(Effect.gen(function*() {
      const { org, repo } = yield* params
      const { repo: record, userId } = yield* writer(request, org, repo)
      const body = yield* bodyAs(VerifyLocks)
      const page = yield* (yield* LfsLocks).verify(record, userId, {
        cursor: cursorOf(body.cursor),
        limit: body.limit ?? 100
      })
      return lfsJson(page)
    }))
)

const unlock = HttpRouter.add(
  "POST",
  "/:org/:repo/info/lfs/locks/:id/unlock",
  (request) =>
    answered(Effect.gen(function*() {
      const { org, repo } = yield* params
      const id = (yield* HttpRouter.params).id ?? ""
      const { repo: record, userId } = yield* writer(request, org, repo)
      const body = yield* bodyAs(Unlock)
      const lock = yield* (yield* LfsLocks).unlock(record, userId, id, body.force ?? false)
      return lfsJson({ lock })
    }))
)

/** The Git LFS locks API at `/<org>/<repo>.git/info/lfs/locks`. */
export const LfsLockRoutes = Layer.mergeAll(create, list, verify, unlock)
