import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { Readable } from "node:stream"
import { LfsBatchRequest, LfsVerifyRequest } from "../../../schemas/git/Lfs.ts"
import { Lfs } from "../../../services/git/Lfs.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { authorizeGit, type GitAccess } from "./GitAuth.ts"
import { answered, bodyAs, lfsJson, params } from "./LfsResponses.ts"

const planOf = (access: GitAccess) => access.principal?.org.plan ?? "free"

const batch = HttpRouter.add(
  "POST",
  "/:org/:repo/info/lfs/objects/batch",
  (request) =>
    answered(Effect.gen(function*() {
      const { org, repo } = yield* params
      const body = yield* bodyAs(LfsBatchRequest)
      const access = yield* authorizeGit(request, org, repo, body.operation === "upload" ? "write" : "read")
      const config = yield* AppConfig
      const protocol = new URL(config.baseUrl).protocol
      const host = request.headers.host ?? new URL(config.baseUrl).host
      const authorization = request.headers.authorization
      const result = yield* (yield* Lfs).batch(access.repo, planOf(access), body, {
        objectsUrl: `${protocol}//${host}/${org}/${repo}/info/lfs/objects`,
        header: authorization === undefined ? {} : { Authorization: authorization }
      })
      return lfsJson(result)
    }))
)

const verify = HttpRouter.add(
  "POST",
  "/:org/:repo/info/lfs/objects/verify",
  (request) =>
    answered(Effect.gen(function*() {
      const { org, repo } = yield* params
      const access = yield* authorizeGit(request, org, repo, "write")
      const body = yield* bodyAs(LfsVerifyRequest)
      yield* (yield* Lfs).verify(access.repo, body.oid, body.size)
      return lfsJson({ message: "ok" })
    }))
)

const upload = HttpRouter.add("PUT", "/:org/:repo/info/lfs/objects/:oid", (request) =>
  answered(Effect.gen(function*() {
    const { oid, org, repo } = yield* params
    const access = yield* authorizeGit(request, org, repo, "write")
    const body = NodeHttpServerRequest.toIncomingMessage(request) as Readable
    yield* (yield* Lfs).upload(access.repo, planOf(access), oid, body)
    return HttpServerResponse.empty({ status: 200 })
  })))

const download = HttpRouter.add(
  "GET",
  "/:org/:repo/info/lfs/objects/:oid",
  (request) =>
    answered(Effect.gen(function*() {
      const { oid, org, repo } = yield* params
      const access = yield* authorizeGit(request, org, repo, "read")
      const object = yield* (yield* Lfs).download(access.repo, oid)
      return HttpServerResponse.stream(object.body, {
        contentType: "application/octet-stream",
        headers: { "content-length": String(object.size) }
      })
    }))
)

/** Git LFS batch API and basic transfers at `/<org>/<repo>.git/info/lfs` (GUIDE §8). */
export const LfsRoutes = Layer.mergeAll(batch, verify, upload, download)
