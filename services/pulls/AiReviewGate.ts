import { Context, Effect } from "effect"

/** The commit status context of the AI review (GUIDE §15). */
export const AI_REVIEW_CONTEXT = "ai/review"

/**
 * Whether a repository's merges wait for the AI review (GUIDE §15: "auto-merge waits on it
 * when AI review is enabled"). Filled by the AI review layer; without it nothing waits.
 */
export const AiReviewGate = Context.Reference<{ required(repoId: string): Effect.Effect<boolean> }>(
  "canopy/pulls/AiReviewGate",
  { defaultValue: () => ({ required: () => Effect.succeed(false) }) }
)
