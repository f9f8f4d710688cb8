import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import {
  CiConfig,
  CiRun,
  CiRunDetail,
  CiRunList,
  CiRunsQuery,
  CiVariable,
  CiVariableList,
  PutCiVariable,
  TriggerRun,
  UpdateCiConfig,
  VariableName
} from "../../../schemas/ci/Ci.ts"
import { Conflict, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const repoParams = { org: Schema.String, repo: Schema.String }
const runParams = {
  ...repoParams,
  number: Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1))
}

/**
 * CI (spec 001 "CI"; GUIDE §14): configuration (`code:admin` to change), variables
 * (`code:admin`; secret values never returned), runs (`code:read` to read, `code:write` to
 * trigger, cancel and re-run) and per-job logs.
 */
export class CiApi extends HttpApiGroup.make("ci").add(
  HttpApiEndpoint.get("config", "/ci/config", { params: repoParams, success: CiConfig, error: NotFound })
    .annotate(RequiredScope, "code:read").annotateMerge(
      docs(
        "CI configuration",
        "Every field with its default; `enabled` is false until an admin turns CI on. Scope `code:read`."
      )
    ),
  HttpApiEndpoint.patch("updateConfig", "/ci/config", {
    params: repoParams,
    payload: UpdateCiConfig,
    success: CiConfig,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Change the CI configuration",
      "Commands set to null are auto-detected from the commit's files; `timeout` 10–900 seconds (the plan's " +
        "ceiling). Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.get("variables", "/ci/variables", { params: repoParams, success: CiVariableList, error: NotFound })
    .annotate(RequiredScope, "code:admin").annotateMerge(
      docs("CI variables", "Non-secret values are returned; secret ones only as `hasValue`. Scope `code:admin`.")
    ),
  HttpApiEndpoint.put("putVariable", "/ci/variables/:name", {
    params: { ...repoParams, name: VariableName },
    payload: PutCiVariable,
    success: CiVariable,
    error: NotFound
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Set a CI variable",
      "201 when created, 200 when replaced. A `secret` value is encrypted at rest, never returned and masked " +
        "as `***` in logs. Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.delete("removeVariable", "/ci/variables/:name", {
    params: { ...repoParams, name: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "code:admin").annotateMerge(docs("Delete a CI variable", "Scope `code:admin`.")),
  HttpApiEndpoint.post("trigger", "/ci/runs", {
    params: repoParams,
    payload: TriggerRun,
    success: CiRun.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict, ValidationError]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Trigger a CI run",
      "Runs `commitSha` (default: the branch head; it must be reachable from `branch`). 409 when CI is not " +
        "enabled. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.get("runs", "/ci/runs", {
    params: repoParams,
    query: CiRunsQuery,
    success: CiRunList,
    error: NotFound
  })
    .annotate(RequiredScope, "code:read").annotateMerge(
      docs("List CI runs", "Newest first; filter by `status`, `limit` 1–100 (default 30). Scope `code:read`.")
    ),
  HttpApiEndpoint.get("run", "/ci/runs/:number", { params: runParams, success: CiRunDetail, error: NotFound })
    .annotate(RequiredScope, "code:read").annotateMerge(
      docs("A CI run", "`{run, jobs, testSummary}`; `testSummary` is null until the test job ran. Scope `code:read`.")
    ),
  HttpApiEndpoint.post("cancel", "/ci/runs/:number/cancel", {
    params: runParams,
    success: CiRun,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Cancel a CI run",
      "A queued or running run ends `cancelled` (SIGTERM to the job's processes, SIGKILL 10 s later); a " +
        "completed one is a 409. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.post("rerun", "/ci/runs/:number/rerun", {
    params: runParams,
    success: CiRun.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs("Re-run a CI run", "A new run of the same commit, with `rerunOf`. Scope `code:write`.")
  ),
  HttpApiEndpoint.get("log", "/ci/runs/:number/jobs/:jobId/log", {
    params: { ...runParams, jobId: Schema.String },
    success: Schema.String.pipe(HttpApiSchema.asText()),
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "A CI job's log",
      "`text/plain`, secrets masked; while the job runs, what it printed so far. Scope `code:read`."
    )
  )
).prefix("/api/v1/code/repos/:org/:repo").middleware(Authentication) {}
