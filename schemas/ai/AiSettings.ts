import { Schema } from "effect"

/**
 * AI review settings per repository (spec 001 "AI review settings", GUIDE §15). `apiKey` is
 * write-only: responses carry `hasApiKey` instead; `apiKey: null` removes the key.
 */

export const ModelProvider = Schema.Literals(["openai", "anthropic", "google"])
export type ModelProvider = typeof ModelProvider.Type

export const AutonomyLevel = Schema.Literals(["suggest", "apply", "merge"])
export type AutonomyLevel = typeof AutonomyLevel.Type

export const FocusArea = Schema.Literals([
  "security",
  "performance",
  "best_practices",
  "error_handling",
  "testing",
  "documentation"
])
export type FocusArea = typeof FocusArea.Type

export const AI_DEFAULTS = {
  enabled: false,
  modelProvider: "openai",
  modelName: "gpt-4o-mini",
  autoReviewPRs: true,
  reviewDrafts: false,
  autonomyLevel: "suggest",
  requireHumanApproval: true,
  focusAreas: ["security", "performance", "best_practices"]
} as const

export const AiSettings = Schema.Struct({
  enabled: Schema.Boolean,
  modelProvider: ModelProvider,
  modelName: Schema.String,
  /** The provider's API root for OpenAI-compatible servers and proxies; null: the provider's own. */
  baseUrl: Schema.NullOr(Schema.String),
  hasApiKey: Schema.Boolean,
  autoReviewPRs: Schema.Boolean,
  reviewDrafts: Schema.Boolean,
  autonomyLevel: AutonomyLevel,
  requireHumanApproval: Schema.Boolean,
  focusAreas: Schema.Array(FocusArea)
})
export type AiSettings = typeof AiSettings.Type

export const UpdateAiSettings = Schema.Struct({
  enabled: Schema.optional(Schema.Boolean),
  modelProvider: Schema.optional(ModelProvider),
  modelName: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))),
  baseUrl: Schema.optional(Schema.NullOr(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048)))),
  apiKey: Schema.optional(Schema.NullOr(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096)))),
  autoReviewPRs: Schema.optional(Schema.Boolean),
  reviewDrafts: Schema.optional(Schema.Boolean),
  autonomyLevel: Schema.optional(AutonomyLevel),
  requireHumanApproval: Schema.optional(Schema.Boolean),
  focusAreas: Schema.optional(Schema.Array(FocusArea))
})
export type UpdateAiSettings = typeof UpdateAiSettings.Type
