import { Layer } from "effect"
import { CodeOwners } from "../services/pulls/CodeOwners.ts"
import { SuggestionCommits } from "../services/pulls/SuggestionCommit.ts"
import { IssueComments } from "../services/repoIssues/IssueComments.ts"
import { RepositoryIssues } from "../services/repoIssues/RepositoryIssues.ts"

/** Code review services beside pull requests: suggestion commits, CODEOWNERS, repository issues. */
export const CodeReviewLive = Layer.mergeAll(
  SuggestionCommits.layer,
  CodeOwners.layer,
  RepositoryIssues.layer,
  IssueComments.layer
)
