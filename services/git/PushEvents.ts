import { CreateEvent, DeleteEvent, PushEvent, type PushEventData } from "../../schemas/git/Repositories.ts"
import type { NewDomainEvent } from "../events/Events.ts"
import { describeCommit } from "./NewCommits.ts"
import { ZERO_SHA } from "./PktLine.ts"
import type { PushCommits } from "./PushWalk.ts"
import type { RepoRecord } from "./Repositories.ts"

/** A ref change as `RefUpdates` has it (`ZERO_SHA` as old: created; as new: deleted). */
interface RefCommand {
  readonly name: string
  readonly oldSha: string
  readonly newSha: string
}

/** Commits listed in one push event (GitHub lists 20; the rest are reachable by `after`). */
const MAX_EVENT_COMMITS = 100

/** Branches first (the default branch first of all), then tags and other refs: the order commits are listed in. */
const listingRank = (repo: RepoRecord, name: string) =>
  name === `refs/heads/${repo.defaultBranch}` ? 0 : name.startsWith("refs/heads/") ? 1 : 2

/**
 * The `push` (and `create`/`delete`) events of a push's applied commands, in command order.
 * Each new commit is listed in one event only, the first that reaches it in listing order
 * (so importing a history with hundreds of tags lists it once, in its branches' events,
 * not once per tag): a push's payloads grow with its new commits, not with commits × refs.
 */
export const pushEvents = (
  repo: RepoRecord,
  pusher: PushEventData["sender"],
  commands: ReadonlyArray<RefCommand>,
  walk: PushCommits | undefined
): ReadonlyArray<NewDomainEvent> => {
  const repository = { id: repo.id, name: repo.name, fullName: `${repo.orgSlug}/${repo.slug}` }
  const timestamp = new Date().toISOString()
  const listed = new Map<string, PushEventData["commits"]>()
  const order = commands.map((command, index) => ({ command, index }))
    .sort((a, b) => listingRank(repo, a.command.name) - listingRank(repo, b.command.name) || a.index - b.index)
  for (const { command } of order) {
    const newest = command.newSha === ZERO_SHA || walk === undefined
      ? []
      : walk.listOnce(command.newSha, MAX_EVENT_COMMITS)
    // GitHub lists the newest commits of a push, oldest first.
    listed.set(command.name, newest.map(describeCommit).reverse())
  }
  return commands.flatMap((command) => {
    const push: PushEventData = {
      repository,
      sender: pusher,
      ref: command.name,
      before: command.oldSha,
      after: command.newSha,
      commits: listed.get(command.name) ?? [],
      timestamp
    }
    const events: Array<NewDomainEvent> = [PushEvent.make(repo.orgId, push)]
    if (command.oldSha === ZERO_SHA || command.newSha === ZERO_SHA) {
      const data = {
        repository,
        sender: pusher,
        ref: command.name.replace(/^refs\/(heads|tags)\//, ""),
        refType: command.name.startsWith("refs/tags/") ? "tag" as const : "branch" as const,
        sha: command.newSha === ZERO_SHA ? command.oldSha : command.newSha,
        timestamp
      }
      events.push((command.oldSha === ZERO_SHA ? CreateEvent : DeleteEvent).make(repo.orgId, data))
    }
    return events
  })
}

/** Branch names tried, in order, when the configured default branch was not pushed into an empty repository. */
const PREFERRED_DEFAULTS = ["main", "master"]

/**
 * The default branch after a push (GitHub's behaviour, made predictable): when the
 * repository had no branch and the configured default still does not exist, `main`, else
 * `master`, else the first branch pushed. A default branch that exists is never changed.
 */
export const defaultBranchAfter = (
  configured: string,
  branchesBefore: ReadonlySet<string>,
  applied: ReadonlyArray<RefCommand>
): string => {
  if (branchesBefore.size > 0) return configured
  const pushed = applied.filter((c) => c.name.startsWith("refs/heads/") && c.newSha !== ZERO_SHA)
    .map((c) => c.name.slice("refs/heads/".length))
  if (pushed.length === 0 || pushed.includes(configured)) return configured
  return PREFERRED_DEFAULTS.find((name) => pushed.includes(name)) ?? pushed[0]
}
