import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AiReview, AiSuggestion, AppliedSuggestion, DismissSuggestion } from "../../../schemas/ai/AiReviews.ts"
import { AiSettings, UpdateAiSettings } from "../../../schemas/ai/AiSettings.ts"
import { Conflict, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const repoParams = { org: Schema.String, repo: Schema.String }
const PullNumber = Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1))
const pullParams = { ...repoParams, number: PullNumber }
const suggestionParams = { ...repoParams, id: Schema.String }

/** AI review (spec 001 "AI review", GUIDE §15). */
export class AiApi extends HttpApiGroup.make("ai").add(
  HttpApiEndpoint.get("settings", "/:org/:repo/ai/settings", {
    params: repoParams,
    success: AiSettings,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "Read AI review settings",
      "Every setting with its default; `hasApiKey` instead of the key. Scope `code:read`."
    )
  ),
  HttpApiEndpoint.patch("updateSettings", "/:org/:repo/ai/settings", {
    params: repoParams,
    payload: UpdateAiSettings,
    success: AiSettings,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Update AI review settings",
      "Any subset, `apiKey` included (write-only, encrypted; `null` removes it). `baseUrl` points at an " +
        "OpenAI-compatible server or proxy (e.g. Ollama's `http://localhost:11434/v1`). Enabling needs a key " +
        "or a baseUrl. Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.post("trigger", "/:org/:repo/pulls/:number/ai-review", {
    params: pullParams,
    success: AiReview.annotate({ httpApiStatus: 202 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Trigger an AI review",
      "Queues a review of the head (202, status `queued`); a newer one supersedes a running one. 409 when AI " +
        "review is not enabled or the pull request is not open. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.get("review", "/:org/:repo/pulls/:number/ai-review", {
    params: pullParams,
    success: AiReview,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "Read the latest AI review",
      "Status, summary, sentiment, counts, suggestions, usage (tokens the organization pays for) and a failed " +
        "review's error; 404 before the first. Scope `code:read`."
    )
  ),
  HttpApiEndpoint.post("applySuggestion", "/:org/:repo/ai/suggestions/:id/apply", {
    params: suggestionParams,
    success: AppliedSuggestion,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Apply an AI suggestion",
      "One commit on the source branch (author the bot, committer you); 409 when outdated or not open. " +
        "Scope `code:write`."
    )
  ),
  HttpApiEndpoint.post("dismissSuggestion", "/:org/:repo/ai/suggestions/:id/dismiss", {
    params: suggestionParams,
    payload: DismissSuggestion,
    success: AiSuggestion,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs("Dismiss an AI suggestion", "With an optional `reason`; 409 when not open. Scope `code:write`.")
  )
).prefix("/api/v1/code/repos").middleware(Authentication) {}
