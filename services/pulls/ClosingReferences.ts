import { Context, Effect } from "effect"
import type { RepoRecord } from "../git/Repositories.ts"

/**
 * `Fixes #n` and its kin (GUIDE §11): `Fix|Fixes|Fixed|Close|Closes|Closed|Resolve|Resolves|
 * Resolved #n` in any case, in a merged pull request's title, body or commit messages.
 */
const KEYWORD = /\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?):?\s+#(\d+)\b/gi

/** The issue numbers `texts` close, once each, in order of first mention. */
export const closingReferences = (texts: ReadonlyArray<string>): ReadonlyArray<number> => {
  const numbers: Array<number> = []
  for (const text of texts) {
    for (const match of text.matchAll(KEYWORD)) {
      const number = Number(match[1])
      if (Number.isSafeInteger(number) && number > 0 && !numbers.includes(number)) numbers.push(number)
    }
  }
  return numbers
}

export interface ClosingInput {
  readonly repo: RepoRecord
  readonly numbers: ReadonlyArray<number>
  readonly pullRequest: { readonly id: string; readonly number: number }
  readonly sender: { readonly id: string; readonly name: string }
}

/**
 * The seam to repository issues: after a merge, close the issues the pull request
 * references (`issue.closed`, `closedBy`). Numbers that are not open issues (a pull
 * request's number, an unknown one) are skipped by the implementation. Without repository
 * issues nothing happens.
 */
export const IssueCloser = Context.Reference<{ closeReferenced(input: ClosingInput): Effect.Effect<void> }>(
  "canopy/pulls/IssueCloser",
  { defaultValue: () => ({ closeReferenced: () => Effect.void }) }
)
