/**
 * Commit hints: the NOTIFY that wakes every runner after a publishing commit also names the
 * organizations and event types it appended ("<orgId> <type>" lines). A reader of the
 * ordered outbox only sees an event once every older transaction anywhere has ended (the
 * horizon, `EventLog.ts`), which under load can be hundreds of milliseconds behind the
 * commit; a hint arrives with the commit itself. Hints are for caches that only need to know
 * *that* something changed (drop, recompute): no order, no data, and they can be missing
 * (too many to fit a notification, a publisher that notifies after commit without them, a
 * lost LISTEN connection), so such a cache still listens to the ordered events too.
 */
export interface CommitHint {
  readonly orgId: string
  readonly type: string
}

/** The hints a notification's payload carries (none for an empty or foreign payload). */
export const parseHints = (payload: string): ReadonlyArray<CommitHint> => {
  if (payload === "") return []
  const hints: Array<CommitHint> = []
  for (const line of payload.split("\n")) {
    const space = line.indexOf(" ")
    if (space > 0 && space < line.length - 1) hints.push({ orgId: line.slice(0, space), type: line.slice(space + 1) })
  }
  return hints
}
