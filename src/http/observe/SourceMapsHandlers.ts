import { Effect, Stream } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type * as Multipart from "effect/http/Multipart"
import { PayloadTooLarge } from "../../../schemas/observe/SourceMaps.ts"
import { ValidationError } from "../../../schemas/platform/Errors.ts"
import { SourceMaps } from "../../../services/observe/SourceMaps.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

const orgId = CurrentPrincipal.pipe(Effect.map((principal) => principal.org.id))

/** Reads the form's `file`, `release` and `name` parts; limits become 413, a broken form 400. */
const readForm = (parts: Stream.Stream<Multipart.Part, Multipart.MultipartError>) =>
  Effect.gen(function*() {
    const fields: Record<string, string> = {}
    let file: Uint8Array | undefined
    yield* Stream.runForEach(parts, (part) => {
      // `-F file=<app.js.map` sends the map without a file name: a text field, still the file.
      if (part._tag === "Field" && part.key === "file" && file === undefined) {
        return Effect.sync(() => void (file = new TextEncoder().encode(part.value)))
      }
      if (part._tag === "Field") return Effect.sync(() => void (fields[part.key] = part.value))
      if (part.key !== "file" || file !== undefined) return Stream.runDrain(part.content)
      return Effect.map(part.contentEffect, (bytes) => void (file = bytes))
    })
    const missing = [
      ...(file === undefined ? ["file"] : []),
      ...["release", "name"].filter((key) => fields[key] === undefined)
    ]
    if (missing.length > 0) {
      return yield* new ValidationError({
        message: `The form lacks ${missing.join(", ")}`,
        details: missing.map((key) => ({ path: `body.${key}`, message: "is required" }))
      })
    }
    return { release: fields.release, name: fields.name, content: file! }
  }).pipe(
    Effect.catchTag("MultipartError", (error): Effect.Effect<never, ValidationError | PayloadTooLarge> => {
      switch (error.reason._tag) {
        case "Parse":
          return Effect.fail(new ValidationError({ message: "The multipart form could not be read" }))
        case "InternalError":
          return Effect.die(error)
        default:
          return Effect.fail(new PayloadTooLarge({ message: "The source map is over the 50 MiB limit" }))
      }
    })
  )

export const SourceMapsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "sourceMaps",
  Effect.fn(function*(handlers) {
    const sourceMaps = yield* SourceMaps
    return handlers.handleAll({
      upload: ({ payload }) =>
        Effect.flatMap(orgId, (org) => Effect.flatMap(readForm(payload), (form) => sourceMaps.upload(org, form))),
      list: ({ query }) => Effect.flatMap(orgId, (org) => sourceMaps.list(org, query)),
      get: ({ params }) => Effect.flatMap(orgId, (org) => sourceMaps.get(org, params.id)),
      remove: ({ params }) => Effect.flatMap(orgId, (org) => sourceMaps.remove(org, params.id))
    })
  })
)
