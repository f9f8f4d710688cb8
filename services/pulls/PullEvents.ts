import { Clock, Effect } from "effect"
import type { EventType } from "../../schemas/events/Events.ts"
import { PullRequestReviewRequested } from "../../schemas/pulls/PullRequestEvents.ts"
import { publish } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { eventRepository, type PrRow, toEventPullRequest } from "./PullRequestRows.ts"

/**
 * Publishes a `pull_request.*` event with the spec's common fields (`repository`,
 * `pullRequest`, `sender`, `timestamp`) plus `extra`, in the caller's transaction.
 */
export const publishPullRequestEvent = <A>(
  type: EventType<A>,
  repo: RepoRecord,
  row: PrRow,
  sender: { readonly id: string; readonly name: string } | null,
  extra: Omit<A, "repository" | "pullRequest" | "sender" | "timestamp">
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const data = {
      repository: eventRepository(repo),
      pullRequest: toEventPullRequest(row),
      sender: sender === null ? null : { id: sender.id, name: sender.name },
      timestamp: new Date(now).toISOString(),
      ...extra
    } as A
    yield* publish(type.make(repo.orgId, data))
  })

export const publishReviewRequested = (
  repo: RepoRecord,
  row: PrRow,
  sender: Actor | null,
  usernames: ReadonlyArray<string>
) =>
  usernames.length === 0
    ? Effect.void
    : publishPullRequestEvent(PullRequestReviewRequested, repo, row, sender, { requestedReviewers: usernames })
