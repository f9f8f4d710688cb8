import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import {
  CreateProtectionRule,
  ProtectionRule,
  ProtectionRuleList,
  UpdateProtectionRule
} from "../../../schemas/protection/BranchProtection.ts"
import { PlanRequired } from "../../../schemas/webhooks/Webhooks.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const repoParams = { org: Schema.String, repo: Schema.String }
const ruleParams = { ...repoParams, ruleId: Schema.String }

/**
 * Branch protection rules (spec 001 "Branch protection", GUIDE §12): read with `code:read`,
 * written with `code:admin`. `{org}` must be the key's organization, any other answers 404.
 */
export class BranchProtectionApi extends HttpApiGroup.make("branchProtection").add(
  HttpApiEndpoint.get("list", "/", { params: repoParams, success: ProtectionRuleList, error: NotFound }).annotate(
    RequiredScope,
    "code:read"
  ).annotateMerge(
    docs(
      "List branch protection rules",
      "The repository's rules, oldest first; `notEnforced` names options the current plan no longer includes. " +
        "Scope `code:read`."
    )
  ),
  HttpApiEndpoint.post("create", "/", {
    params: repoParams,
    payload: CreateProtectionRule,
    success: ProtectionRule.annotate({ httpApiStatus: 201 }),
    error: [NotFound, PlanRequired]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Create a branch protection rule",
      "`branchPattern` is a glob (`main` exact, `release/*` one level, `feature/**` any depth, `hotfix-*` prefix); " +
        "omitted options take the spec's defaults. Status checks, code owners and linear history need Pro, signed " +
        "commits and push restrictions Enterprise (403 `plan_required`). Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.get("get", "/:ruleId", { params: ruleParams, success: ProtectionRule, error: NotFound }).annotate(
    RequiredScope,
    "code:read"
  ).annotateMerge(docs("Read a branch protection rule", "One rule of the repository. Scope `code:read`.")),
  HttpApiEndpoint.patch("update", "/:ruleId", {
    params: ruleParams,
    payload: UpdateProtectionRule,
    success: ProtectionRule,
    error: [NotFound, PlanRequired]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Update a branch protection rule",
      "Any subset of the rule's fields. Turning on an option the plan lacks is a 403 `plan_required`. " +
        "Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.delete("remove", "/:ruleId", {
    params: ruleParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("Delete a branch protection rule", "Removes the rule (204). Scope `code:admin`.")
  )
).prefix("/api/v1/code/repos/:org/:repo/branches/protection").middleware(Authentication) {}
