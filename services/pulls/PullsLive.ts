import { Layer } from "effect"
import { Automation } from "./Automation.ts"
import { Comments } from "./Comments.ts"
import { Mergeability } from "./Mergeability.ts"
import { Merger } from "./Merger.ts"
import { PullRequests } from "./PullRequests.ts"
import { Reviews } from "./Reviews.ts"
import { Suggestions } from "./Suggestions.ts"

/** Every pull request service, wired (needs the git services, SQL and AppConfig). */
export const PullsLive = Layer.mergeAll(Mergeability.layer, Automation.layer, Suggestions.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(Merger.layer, Comments.layer, Reviews.layer)),
  Layer.provideMerge(PullRequests.layer)
)
