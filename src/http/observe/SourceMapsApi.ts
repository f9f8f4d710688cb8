import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import * as Multipart from "effect/http/Multipart"
import {
  ListSourceMapsQuery,
  PayloadTooLarge,
  SourceMapList,
  SourceMapRecord
} from "../../../schemas/observe/SourceMaps.ts"
import { NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

/**
 * The upload form (spec "Observe"): read part by part, so the map is never on disk twice.
 * No content type makes a part a text field (Effect's default does so for
 * `application/json`, which curl and browsers send for a `.map` file): a part with a
 * file name is the file, whatever its type.
 */
const UploadForm = Schema.Struct({
  file: Multipart.SingleFileSchema,
  release: Schema.String,
  name: Schema.String
}).pipe(HttpApiSchema.asMultipartStream({ fieldMimeTypes: [] }))

/**
 * Source maps: listed with `observe:read`; uploaded and deleted with `observe:ingest`, the
 * scope of the build or deploy key that ships a release (there is no `observe:write`).
 */
export class SourceMapsApi extends HttpApiGroup.make("sourceMaps").add(
  HttpApiEndpoint.post("upload", "/", {
    payload: UploadForm,
    success: SourceMapRecord.annotate({ httpApiStatus: 201 }),
    error: [ValidationError, PayloadTooLarge]
  }).annotate(RequiredScope, "observe:ingest").annotateMerge(
    docs(
      "Upload a source map",
      "Multipart `file` (a source map, up to 50 MiB), `release` and `name` (the minified file's URL or path); replaces the map of the same release and name. Scope `observe:ingest`."
    )
  ),
  HttpApiEndpoint.get("list", "/", {
    query: ListSourceMapsQuery,
    success: SourceMapList
  }).annotate(RequiredScope, "observe:read").annotateMerge(
    docs("List source maps", "The organization's uploaded source maps, newest first. Scope `observe:read`.")
  ),
  HttpApiEndpoint.get("get", "/:id", {
    params: { id: Schema.String },
    success: SourceMapRecord,
    error: NotFound
  }).annotate(RequiredScope, "observe:read").annotateMerge(
    docs("Read a source map record", "One uploaded map's record (id, filename, release, size). Scope `observe:read`.")
  ),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "observe:ingest").annotateMerge(
    docs("Delete a source map", "Frames of its release are no longer symbolicated with it. Scope `observe:ingest`.")
  )
).prefix("/api/v1/observe/sourcemaps").middleware(Authentication) {}
