import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { IssuePerson } from "../../schemas/issues/RepositoryIssues.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { closeIssueRow, selectIssue } from "./IssueRows.ts"

/**
 * `Fixes #n` (GUIDE §11): a merged pull request closes the repository issues its title,
 * body or commit messages reference with a closing keyword.
 */

/** `Fix|Fixes|Fixed|Close|Closes|Closed|Resolve|Resolves|Resolved #n`, any case, also `Fixes: #n`. */
const CLOSING_REFERENCE = /\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)(?::[ \t]*|[ \t]+)#(\d{1,9})(?![\w])/gi

/** The issue numbers the texts close, each once, in order of first mention (pure). */
export const closingReferences = (texts: ReadonlyArray<string>): ReadonlyArray<number> => {
  const numbers: Array<number> = []
  for (const text of texts) {
    for (const match of text.matchAll(CLOSING_REFERENCE)) {
      const number = Number(match[1])
      if (number > 0 && !numbers.includes(number)) numbers.push(number)
    }
  }
  return numbers
}

/**
 * Closes every open issue of `repo` that `texts` reference with a closing keyword, with the
 * pull request as `closedBy` and `issue.closed` published for each, in one transaction
 * (the caller's, when it runs in one). Numbers naming a pull request, a closed issue or
 * nothing are skipped. Returns the numbers it closed.
 */
export const closeReferenced = (input: {
  readonly repo: RepoRecord
  readonly texts: ReadonlyArray<string>
  readonly pullRequest: { readonly id: string; readonly number: number }
  readonly actor: IssuePerson
}): Effect.Effect<ReadonlyArray<number>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const numbers = closingReferences(input.texts).filter((number) => number !== input.pullRequest.number)
    if (numbers.length === 0) return []
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      const closed: Array<number> = []
      for (const number of numbers) {
        const row = yield* selectIssue(input.repo.id, number, true)
        if (row === undefined || row.state !== "open") continue
        yield* closeIssueRow({ repo: input.repo, issueId: row.id, actor: input.actor, pullRequest: input.pullRequest })
        closed.push(number)
      }
      return closed
    })).pipe(Effect.orDie)
  })
