import { Effect, type Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { LFS_MEDIA_TYPE } from "../../../schemas/git/Lfs.ts"
import { LfsError } from "../../../services/git/Lfs.ts"
import { refusalsAnswered } from "./GitAuth.ts"

/** An LFS-style error body (git-lfs shows `message`). */
const lfsError = (status: number, message: string) =>
  HttpServerResponse.text(JSON.stringify({ message }), { status, contentType: LFS_MEDIA_TYPE })

export const lfsJson = (body: unknown, status = 200) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: LFS_MEDIA_TYPE })

export const params = Effect.map(HttpRouter.params, (p) => ({ org: p.org ?? "", repo: p.repo ?? "", oid: p.oid ?? "" }))

/** Decodes the JSON body with `schema`; a bad body is a 422 in LFS's error style. */
export const bodyAs = <A>(schema: Schema.ConstraintDecoder<A, never>) =>
  HttpServerRequest.schemaBodyJson(schema).pipe(
    Effect.mapError(() => new LfsError({ status: 422, message: "The request body is not a valid LFS request" }))
  )

/** Answers LFS errors (and auth refusals) instead of failing. */
export const answered = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, LfsError | HttpServerResponse.HttpServerResponse, R>
) =>
  refusalsAnswered(
    effect.pipe(Effect.catchTag("LfsError", (error) => Effect.succeed(lfsError(error.status, error.message))))
  )
