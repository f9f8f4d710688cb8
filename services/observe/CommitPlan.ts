import { makeId } from "../platform/Ids.ts"
import type { PreparedEvent } from "./EventPreparation.ts"
import type { SpanInput } from "./Performance.ts"

/**
 * What one group commit writes, decided before its transaction starts (pure): which
 * events are kept, the issue and release counter deltas (every event counts, kept or
 * not), the distinct-user pairs and stacks not yet known to be stored, the spans. Rows of
 * each kind are sorted by key, so commits running side by side take their row locks in one
 * order and cannot deadlock.
 */

export interface IssueDelta {
  readonly id: string
  readonly fingerprint: string
  /** Created by this commit (its first event was kept whatever the sampling). */
  readonly isNew: boolean
  title: string
  type: string | null
  culprit: string | null
  level: string
  count: number
  first: number
  last: number
  firstRelease: string | null
  lastRelease: string | null
  readonly releases: Set<string>
  readonly environments: Set<string>
}

export interface ReleaseDelta {
  readonly version: string
  events: number
  errors: number
  spans: number
  errorSpans: number
  newIssues: number
  first: number
  last: number
}

export interface KeptEvent {
  readonly event: PreparedEvent
  readonly issueId: string
  readonly weight: number
}

export interface CommitPlan {
  readonly kept: ReadonlyArray<KeptEvent>
  readonly dropped: number
  readonly issues: ReadonlyArray<IssueDelta>
  readonly releases: ReadonlyArray<ReleaseDelta>
  /** Issue × user pairs not known to be stored (`userPairKey`). */
  readonly users: ReadonlyArray<{ readonly issue_id: string; readonly user_key: string }>
  /** Stacks of kept events not known to be stored: id → frames JSON. */
  readonly stacks: ReadonlyMap<string, string>
  readonly spans: ReadonlyArray<SpanInput>
}

/** What the planner's caller remembers as already committed (a miss only costs a redundant upsert). */
export interface StoredRows {
  readonly hasStack: (stackId: string) => boolean
  readonly hasUser: (pairKey: string) => boolean
}

/** The key of an issue × user pair in `StoredRows.hasUser`. */
export const userPairKey = (issueId: string, userKey: string) => `${issueId}\u0000${userKey}`

const nothingStored: StoredRows = { hasStack: () => false, hasUser: () => false }

const isError = (level: string) => level === "error" || level === "fatal"
const byKey = <A>(key: (a: A) => string) => (a: A, b: A) => key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0

/**
 * Plans a commit. `issueIdOf` knows the issue of every fingerprint that has one (and
 * remembers the ones created here); `decide` samples an event (`force` for the first
 * event of a new issue and for spans) and returns its weight, 0 to drop it.
 */
export const planCommit = (
  events: ReadonlyArray<PreparedEvent>,
  issueIds: {
    readonly get: (fingerprint: string) => string | undefined
    readonly set: (fingerprint: string, id: string) => void
  },
  decide: (event: PreparedEvent, force: boolean) => number,
  stored: StoredRows = nothingStored
): CommitPlan => {
  const issues = new Map<string, IssueDelta>()
  const releases = new Map<string, ReleaseDelta>()
  const users = new Map<string, { issue_id: string; user_key: string }>()
  const stacks = new Map<string, string>()
  const kept: Array<KeptEvent> = []
  const spans: Array<SpanInput> = []
  let dropped = 0

  const releaseOf = (version: string, at: number) => {
    let delta = releases.get(version)
    if (delta === undefined) {
      delta = { version, events: 0, errors: 0, spans: 0, errorSpans: 0, newIssues: 0, first: at, last: at }
      releases.set(version, delta)
    }
    delta.first = Math.min(delta.first, at)
    delta.last = Math.max(delta.last, at)
    return delta
  }

  for (const event of events) {
    const release = event.release === null ? undefined : releaseOf(event.release, event.receivedAt)
    if (event.span !== null) {
      decide(event, true)
      spans.push({
        ...event.span,
        parentId: event.span.parentId ?? undefined,
        timestamp: new Date(event.timestamp),
        release: event.release ?? undefined,
        environment: event.environment ?? undefined
      })
      if (release !== undefined) {
        release.spans++
        if (event.span.status === "error") release.errorSpans++
      }
      continue
    }
    if (release !== undefined) {
      release.events++
      if (isError(event.level)) release.errors++
    }
    const fingerprint = event.fingerprint!
    let issue = issues.get(fingerprint)
    let first = false
    if (issue === undefined) {
      const known = issueIds.get(fingerprint)
      first = known === undefined
      const id = known ?? makeId("grp")
      if (first) {
        issueIds.set(fingerprint, id)
        if (release !== undefined) release.newIssues++
      }
      issue = {
        id,
        fingerprint,
        isNew: first,
        title: event.title,
        type: event.type,
        culprit: event.culprit,
        level: event.level,
        count: 0,
        first: event.receivedAt,
        last: event.receivedAt,
        firstRelease: event.release,
        lastRelease: event.release,
        releases: new Set(),
        environments: new Set()
      }
      issues.set(fingerprint, issue)
    }
    issue.count++
    issue.level = event.level
    issue.last = Math.max(issue.last, event.receivedAt)
    if (event.release !== null) {
      issue.firstRelease ??= event.release
      issue.lastRelease = event.release
      issue.releases.add(event.release)
    }
    if (event.environment !== null) issue.environments.add(event.environment)
    if (event.userKey !== null) {
      const key = userPairKey(issue.id, event.userKey)
      if (!stored.hasUser(key)) users.set(key, { issue_id: issue.id, user_key: event.userKey })
    }
    const weight = decide(event, first)
    if (weight > 0) {
      kept.push({ event, issueId: issue.id, weight })
      if (event.stackId !== null && !stored.hasStack(event.stackId)) stacks.set(event.stackId, event.stack!)
    } else {
      dropped++
    }
  }

  return {
    kept,
    dropped,
    issues: [...issues.values()].sort(byKey((issue) => issue.fingerprint)),
    releases: [...releases.values()].sort(byKey((release) => release.version)),
    users: [...users.entries()].sort(byKey(([key]) => key)).map(([, pair]) => pair),
    stacks: new Map([...stacks].sort(byKey(([id]) => id))),
    spans
  }
}
