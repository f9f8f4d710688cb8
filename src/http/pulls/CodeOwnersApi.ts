import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { CodeOwnersErrors, CodeOwnersErrorsQuery } from "../../../schemas/pulls/CodeOwners.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

/** CODEOWNERS of a repository (GUIDE §11): the lines it cannot use. Scope `code:read`. */
export class CodeOwnersApi extends HttpApiGroup.make("codeOwners").add(
  HttpApiEndpoint.get("errors", "/:org/:repo/codeowners/errors", {
    params: { org: Schema.String, repo: Schema.String },
    query: CodeOwnersErrorsQuery,
    success: CodeOwnersErrors,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List CODEOWNERS errors",
      "Lines of the CODEOWNERS file (`CODEOWNERS`, `.github/CODEOWNERS` or `docs/CODEOWNERS`) at `ref` (default " +
        "branch by default) that are skipped, with their line number and the reason. Scope `code:read`."
    )
  )
).prefix("/api/v1/code/repos").middleware(Authentication) {}
