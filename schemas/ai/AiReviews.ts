import { Schema } from "effect"

/**
 * AI review results and suggestions (spec 001 "AI review result", GUIDE §15).
 */

export const Severity = Schema.Literals(["critical", "warning", "info"])
export type Severity = typeof Severity.Type

export const Category = Schema.Literals(["security", "performance", "best_practice", "bug", "refactor"])
export type Category = typeof Category.Type

export const Sentiment = Schema.Literals(["positive", "neutral", "needs_work"])
export type Sentiment = typeof Sentiment.Type

export const ReviewStatus = Schema.Literals(["queued", "running", "completed", "failed"])
export type ReviewStatus = typeof ReviewStatus.Type

export const SuggestionState = Schema.Literals(["open", "applied", "dismissed"])

export const AiSuggestion = Schema.Struct({
  id: Schema.String,
  commentId: Schema.NullOr(Schema.String),
  path: Schema.String,
  startLine: Schema.Int,
  endLine: Schema.Int,
  severity: Severity,
  category: Category,
  title: Schema.String,
  body: Schema.String,
  replacement: Schema.NullOr(Schema.String),
  headSha: Schema.String,
  state: SuggestionState,
  dismissReason: Schema.NullOr(Schema.String),
  appliedSha: Schema.NullOr(Schema.String)
})
export type AiSuggestion = typeof AiSuggestion.Type

export const AiReview = Schema.Struct({
  id: Schema.String,
  status: ReviewStatus,
  headSha: Schema.String,
  trigger: Schema.Literals(["auto", "manual"]),
  summary: Schema.NullOr(Schema.String),
  overallSentiment: Schema.NullOr(Sentiment),
  suggestionsCount: Schema.Int,
  securityIssues: Schema.Int,
  performanceIssues: Schema.Int,
  suggestions: Schema.Array(AiSuggestion),
  /** Files left out of the prompt (lockfiles, binaries, generated files, over the budget). */
  skippedFiles: Schema.Array(Schema.String),
  provider: Schema.String,
  model: Schema.String,
  usage: Schema.Struct({ inputTokens: Schema.Int, outputTokens: Schema.Int }),
  error: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  startedAt: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String)
})
export type AiReview = typeof AiReview.Type

export const DismissSuggestion = Schema.Struct({
  reason: Schema.optional(Schema.String.check(Schema.isMaxLength(2000)))
})

export const AppliedSuggestion = Schema.Struct({ suggestion: AiSuggestion, commitSha: Schema.String })

/** What the model answers (GUIDE §15); `replacement` null when it proposes no exact text. */
export const ModelSuggestion = Schema.Struct({
  path: Schema.String,
  startLine: Schema.Int,
  endLine: Schema.Int,
  severity: Severity,
  category: Category,
  title: Schema.String,
  body: Schema.String,
  replacement: Schema.NullOr(Schema.String)
})
export type ModelSuggestion = typeof ModelSuggestion.Type

export const ModelAnswer = Schema.Struct({
  summary: Schema.String,
  overallSentiment: Sentiment,
  suggestions: Schema.Array(ModelSuggestion)
})
export type ModelAnswer = typeof ModelAnswer.Type
