import { Layer } from "effect"
import { IssueComments } from "../services/issues/IssueComments.ts"
import { RepositoryIssues } from "../services/issues/RepositoryIssues.ts"
import { CodeOwners } from "../services/pulls/CodeOwners.ts"
import { SuggestionCommits } from "../services/pulls/SuggestionCommit.ts"

/** Code review services beside pull requests: suggestion commits, CODEOWNERS, repository issues. */
export const CodeReviewLive = Layer.mergeAll(
  SuggestionCommits.layer,
  CodeOwners.layer,
  RepositoryIssues.layer,
  IssueComments.layer
)
