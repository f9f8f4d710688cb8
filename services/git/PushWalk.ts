import { Effect } from "effect"
import { type GitCommandError, gitText, runGit } from "./GitProcess.ts"
import { HEAVY_NICE } from "./GitWork.ts"
import { parseRecord, type WalkedCommit, walkNewCommits } from "./NewCommits.ts"

/**
 * Commits one push walk reads into memory. A push adding more (an import of a very large
 * history) lists fewer commits in its events, and a check that needs all of a ref's new
 * commits walks that ref on its own.
 */
const PUSH_WALK_LIMIT = 100_000
/** Records parsed between two yields, so a large walk never holds the event loop for long. */
const PARSE_SLICE = 2_000

/** The new commits of a whole push, read by one git process, and each ref's share of them. */
export interface PushCommits {
  /** The commit each new tip peels to (an annotated tag's target, a commit itself); null when it names none. */
  readonly peeled: ReadonlyMap<string, string | null>
  /** Every commit `tip` adds that no ref of the repository reached before, newest first. */
  readonly all: (tip: string) => Effect.Effect<ReadonlyArray<WalkedCommit>, GitCommandError>
  /**
   * At most `limit` of the commits `tip` adds, newest first, leaving out (and not walking
   * past) commits an earlier call listed: each new commit of a push is listed once.
   */
  readonly listOnce: (tip: string, limit: number) => ReadonlyArray<WalkedCommit>
}

/** One `git cat-file --batch-check` for every tip: the commit each peels to. */
export const peelAll = (dir: string, env: Readonly<Record<string, string>>, tips: ReadonlyArray<string>) =>
  tips.length === 0
    ? Effect.succeed(new Map<string, string | null>())
    : gitText({
      gitDir: dir,
      env,
      args: ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
      stdin: tips.map((tip) => `${tip}^{commit}\n`).join("")
    }).pipe(
      Effect.map((out) => {
        const lines = out.split("\n")
        return new Map(tips.map((tip, i) => [tip, /^([0-9a-f]{40}) commit$/.exec(lines[i] ?? "")?.[1] ?? null]))
      })
    )

/** A binary min-heap of walk positions (a lower position is a newer commit). */
const heapPush = (heap: Array<number>, value: number) => {
  let i = heap.push(value) - 1
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (heap[parent] <= heap[i]) break
    ;[heap[parent], heap[i]] = [heap[i], heap[parent]]
    i = parent
  }
}
const heapPop = (heap: Array<number>) => {
  const top = heap[0]
  const last = heap.pop()!
  if (heap.length > 0) {
    heap[0] = last
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < heap.length && heap[l] < heap[m]) m = l
      if (r < heap.length && heap[r] < heap[m]) m = r
      if (m === i) break
      ;[heap[m], heap[i]] = [heap[i], heap[m]]
      i = m
    }
  }
  return top
}

/**
 * Walks a push once: `git rev-list --parents --header <tips> --not --all` lists every new
 * commit (newest first, each after its children), and each ref's new commits are the ones
 * reachable from its tip through new commits (a commit an old ref reaches has only old
 * ancestors), taken newest first from that one list. Replaces a git process per ref, which
 * on an import walked the whole history once per branch and tag.
 */
export const walkPush = (dir: string, env: Readonly<Record<string, string>>, tips: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const peeled = yield* peelAll(dir, env, tips)
    const starts = [...new Set([...peeled.values()].filter((sha): sha is string => sha !== null))]
    const out = starts.length === 0 ? Buffer.alloc(0) : yield* runGit({
      gitDir: dir,
      env,
      args: ["rev-list", "--parents", "--header", `--max-count=${PUSH_WALK_LIMIT + 1}`, "--stdin", "--not", "--all"],
      stdin: starts.map((sha) => `${sha}\n`).join(""),
      nice: HEAVY_NICE
    })
    const commits: Array<WalkedCommit> = []
    let at = 0
    while (at < out.length) {
      for (let n = 0; n < PARSE_SLICE && at < out.length; n++) {
        let end = out.indexOf(0, at)
        if (end === -1) end = out.length
        const commit = parseRecord(out.subarray(at, end))
        at = end + 1
        if (commit !== undefined) commits.push(commit)
      }
      if (at < out.length) yield* Effect.yieldNow
    }
    const truncated = commits.length > PUSH_WALK_LIMIT
    const position = new Map<string, number>()
    for (const [i, commit] of commits.entries()) position.set(commit.sha, i)
    const listed = new Set<number>()

    const walk = (tip: string, limit: number, skip: Set<number> | undefined) => {
      const start = position.get(peeled.get(tip) ?? "")
      const found: Array<WalkedCommit> = []
      if (start === undefined) return found
      const heap = [start]
      const seen = new Set(heap)
      while (heap.length > 0 && found.length < limit) {
        const at = heapPop(heap)
        if (skip?.has(at)) continue
        skip?.add(at)
        const commit = commits[at]
        found.push(commit)
        for (const parent of commit.parents) {
          const next = position.get(parent)
          if (next !== undefined && !seen.has(next)) {
            seen.add(next)
            heapPush(heap, next)
          }
        }
      }
      return found
    }

    return {
      peeled,
      all: (tip) =>
        truncated ? walkNewCommits(dir, env, tip) : Effect.sync(() => walk(tip, Number.POSITIVE_INFINITY, undefined)),
      listOnce: (tip, limit) => walk(tip, limit, listed)
    } satisfies PushCommits
  })
