import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Readable } from "node:stream"
import { createGunzip } from "node:zlib"
import { ReceivePack, receivePackAdvertisement } from "../../../services/git/ReceivePack.ts"
import { RepoCache } from "../../../services/git/RepoCache.ts"
import { UploadPack } from "../../../services/git/UploadPack.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { authorizeGit, pusherOf, refusalsAnswered } from "./GitAuth.ts"
import { countedFetchStream, countedPushBody } from "./GitMetrics.ts"
import { LfsLockRoutes } from "./LfsLockRoutes.ts"
import { LfsRoutes } from "./LfsRoutes.ts"

/** The request body as a Node stream, gunzipped when git compressed it. */
const bodyOf = (request: HttpServerRequest.HttpServerRequest): Readable => {
  const raw = NodeHttpServerRequest.toIncomingMessage(request) as Readable
  return request.headers["content-encoding"]?.toLowerCase() === "gzip" ? raw.pipe(createGunzip()) : raw
}

const noCache = {
  "cache-control": "no-cache, max-age=0, must-revalidate",
  expires: "Fri, 01 Jan 1980 00:00:00 GMT",
  pragma: "no-cache"
}

const paramsOf = Effect.map(HttpRouter.params, (params) => ({ org: params.org ?? "", repo: params.repo ?? "" }))

const infoRefs = HttpRouter.add(
  "GET",
  "/:org/:repo/info/refs",
  (request) =>
    refusalsAnswered(Effect.gen(function*() {
      const { org, repo } = yield* paramsOf
      const service = new URL(request.url, "http://x").searchParams.get("service")
      if (service !== "git-upload-pack" && service !== "git-receive-pack") {
        return errorResponse(403, "forbidden", "Only git's smart HTTP protocol is served")
      }
      const access = yield* authorizeGit(request, org, repo, service === "git-upload-pack" ? "read" : "write")
      if (service === "git-upload-pack") {
        const body = yield* (yield* UploadPack).advertise(access.repo, request.headers["git-protocol"])
        return HttpServerResponse.uint8Array(body, {
          contentType: "application/x-git-upload-pack-advertisement",
          headers: noCache
        })
      }
      const cache = yield* RepoCache
      const refs = yield* cache.use(access.repo, (synced) => Effect.succeed(synced.refs))
      return HttpServerResponse.uint8Array(receivePackAdvertisement(refs), {
        contentType: "application/x-git-receive-pack-advertisement",
        headers: noCache
      })
    }))
)

const uploadPack = HttpRouter.add(
  "POST",
  "/:org/:repo/git-upload-pack",
  (request) =>
    refusalsAnswered(Effect.gen(function*() {
      const { org, repo } = yield* paramsOf
      const access = yield* authorizeGit(request, org, repo, "read")
      const stream = yield* (yield* UploadPack).serve(access.repo, request.headers["git-protocol"], bodyOf(request))
      return HttpServerResponse.stream(countedFetchStream(stream, access.repo.orgId), {
        contentType: "application/x-git-upload-pack-result",
        headers: noCache
      })
    }))
)

const receivePack = HttpRouter.add(
  "POST",
  "/:org/:repo/git-receive-pack",
  (request) =>
    refusalsAnswered(Effect.gen(function*() {
      const { org, repo } = yield* paramsOf
      const access = yield* authorizeGit(request, org, repo, "write")
      const pushed = countedPushBody(bodyOf(request), access.repo.orgId)
      const body = yield* (yield* ReceivePack).handle(access.repo, pusherOf(access.principal), pushed.body)
      yield* pushed.done
      return HttpServerResponse.uint8Array(body, {
        contentType: "application/x-git-receive-pack-result",
        headers: noCache
      })
    }))
)

/** Git smart HTTP at `/<org>/<repo>.git` (GUIDE §8). */
export const GitRoutes = Layer.mergeAll(infoRefs, uploadPack, receivePack, LfsRoutes, LfsLockRoutes)
