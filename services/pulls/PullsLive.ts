import { Layer } from "effect"
import { Automation } from "./Automation.ts"
import { CodeOwners } from "./CodeOwners.ts"
import { Comments } from "./Comments.ts"
import { Mergeability } from "./Mergeability.ts"
import { Merger } from "./Merger.ts"
import { PullRequestCommands } from "./PullRequestCommands.ts"
import { PullRequests } from "./PullRequests.ts"
import { Reviews } from "./Reviews.ts"
import { SuggestionCommits } from "./SuggestionCommit.ts"
import { Suggestions } from "./Suggestions.ts"

/** Every pull request service, wired (needs the git services, SQL, AppConfig and the cluster). */
export const PullsLive = Layer.mergeAll(
  Mergeability.layer,
  Automation.layer,
  Suggestions.layer,
  PullRequestCommands.layer
).pipe(
  Layer.provideMerge(Layer.mergeAll(Merger.layer, Comments.layer, Reviews.layer)),
  Layer.provideMerge(PullRequests.layer),
  Layer.provideMerge(Layer.mergeAll(SuggestionCommits.layer, CodeOwners.layer))
)
