import { Effect } from "effect"
import type { ChangedFile } from "../../schemas/pulls/PullRequests.ts"
import { gitText } from "../git/GitProcess.ts"
import type { Objects } from "./MergeTree.ts"

/**
 * A pull request's changes against the merge base of its target and head (GUIDE §11:
 * files and diff "against the merge base"), as git prints them, split per file.
 */

/** The best common ancestor of `a` and `b` (one of them when there are several). */
export const mergeBase = (objects: Objects, a: string, b: string) =>
  gitText({ gitDir: objects.dir, env: objects.env, args: ["merge-base", a, b] }).pipe(
    Effect.map((out) => out.trim())
  )

/** The unified diff from the merge base of `target` and `head` to `head`. */
export const diffAgainstMergeBase = (objects: Objects, target: string, head: string) =>
  Effect.gen(function*() {
    const base = yield* mergeBase(objects, target, head)
    return yield* gitText({
      gitDir: objects.dir,
      env: objects.env,
      args: ["-c", "core.quotepath=false", "diff", "--no-color", "--no-ext-diff", "-M", base, head]
    })
  })

/**
 * `diffAgainstMergeBase` in one git process: `git diff target...head` diffs from their merge
 * base (the first, as `git merge-base` prints it, when there are several) to `head`.
 */
export const diffSinceMergeBase = (objects: Objects, target: string, head: string) =>
  gitText({
    gitDir: objects.dir,
    env: objects.env,
    args: ["-c", "core.quotepath=false", "diff", "--no-color", "--no-ext-diff", "-M", `${target}...${head}`]
  })

/** The paths changed from the merge base of `target` and `head` to `head`. */
export const changedFiles = (objects: Objects, target: string, head: string) =>
  Effect.gen(function*() {
    const base = yield* mergeBase(objects, target, head)
    const out = yield* gitText({
      gitDir: objects.dir,
      env: objects.env,
      args: ["diff", "--name-only", "--no-renames", "-z", base, head]
    })
    return out.split("\0").filter((path) => path !== "")
  })

const stripPrefix = (path: string) => path.replace(/^[ab]\//, "")

/** Splits a unified diff into files with their status, counts and patch text. */
export const parseDiff = (text: string): ReadonlyArray<ChangedFile> => {
  const files: Array<ChangedFile> = []
  const chunks = text.split(/^(?=diff --git )/m).filter((chunk) => chunk.startsWith("diff --git "))
  for (const chunk of chunks) {
    const lines = chunk.split("\n")
    let status: ChangedFile["status"] = "modified"
    let oldPath: string | undefined
    let newPath: string | undefined
    let additions = 0
    let deletions = 0
    let inHunk = false
    const header = /^diff --git a\/(.*) b\/(.*)$/.exec(lines[0])
    for (const line of lines.slice(1)) {
      if (line.startsWith("@@")) {
        inHunk = true
        continue
      }
      if (!inHunk) {
        if (line.startsWith("new file mode")) status = "added"
        else if (line.startsWith("deleted file mode")) status = "removed"
        else if (line.startsWith("rename from ")) {
          status = "renamed"
          oldPath = line.slice("rename from ".length)
        } else if (line.startsWith("rename to ")) newPath = line.slice("rename to ".length)
        else if (line.startsWith("--- ") && line !== "--- /dev/null") oldPath ??= stripPrefix(line.slice(4))
        else if (line.startsWith("+++ ") && line !== "+++ /dev/null") newPath ??= stripPrefix(line.slice(4))
        continue
      }
      if (line.startsWith("+")) additions++
      else if (line.startsWith("-")) deletions++
    }
    const path = newPath ?? (status === "removed" ? oldPath : undefined) ?? header?.[2] ?? ""
    const start = chunk.indexOf("\n@@")
    const patch = start < 0 ? "" : chunk.slice(start + 1).replace(/\n$/, "")
    files.push({
      path,
      ...(status === "renamed" && oldPath !== undefined ? { previousPath: oldPath } : {}),
      status,
      additions,
      deletions,
      patch
    })
  }
  return files
}

/** Lines of the new side a patch shows (added or context): where inline comments may go. */
export const newSideLines = (patch: string): ReadonlySet<number> => {
  const lines = new Set<number>()
  let next = 0
  for (const line of patch.split("\n")) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line)
    if (hunk !== null) {
      next = Number(hunk[1])
      continue
    }
    if (next === 0 || line.startsWith("\\")) continue
    if (line.startsWith("-")) continue
    lines.add(next)
    next++
  }
  return lines
}
