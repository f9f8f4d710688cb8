import { Layer } from "effect"
import { IssueComments } from "./IssueComments.ts"
import { RepositoryIssues } from "./RepositoryIssues.ts"

/** Every repository issue service, wired (needs the git services, Events and SQL). */
export const IssuesLive = Layer.mergeAll(RepositoryIssues.layer, IssueComments.layer)
