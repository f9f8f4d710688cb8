import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import * as Multipart from "effect/http/Multipart"
import { NotFound, ValidationError } from "../../../schemas/Errors.ts"
import { ListSourceMapsQuery, PayloadTooLarge, SourceMapList, SourceMapRecord } from "../../../schemas/SourceMaps.ts"
import { Authentication, RequiredScope } from "./Security.ts"

/** The upload form (spec "Observe"): read part by part, so the map is never on disk twice. */
const UploadForm = Schema.Struct({
  file: Multipart.SingleFileSchema,
  release: Schema.String,
  name: Schema.String
}).pipe(HttpApiSchema.asMultipartStream())

/**
 * Source maps: listed with `observe:read`; uploaded and deleted with `observe:ingest`, the
 * scope of the build or deploy key that ships a release (there is no `observe:write`).
 */
export class SourceMapsApi extends HttpApiGroup.make("sourceMaps").add(
  HttpApiEndpoint.post("upload", "/", {
    payload: UploadForm,
    success: SourceMapRecord.annotate({ httpApiStatus: 201 }),
    error: [ValidationError, PayloadTooLarge]
  }).annotate(RequiredScope, "observe:ingest"),
  HttpApiEndpoint.get("list", "/", {
    query: ListSourceMapsQuery,
    success: SourceMapList
  }).annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("get", "/:id", {
    params: { id: Schema.String },
    success: SourceMapRecord,
    error: NotFound
  }).annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "observe:ingest")
).prefix("/api/v1/observe/sourcemaps").middleware(Authentication) {}
