import { Effect } from "effect"
import type { MergeStrategy } from "../../schemas/pulls/PullRequests.ts"
import { gitText } from "../git/GitProcess.ts"
import {
  cherryPickTree,
  commitsBetween,
  commitTree,
  type GitIdentity,
  mergeTrees,
  type Objects,
  treeOf
} from "./MergeTree.ts"

export interface StrategyInput {
  readonly strategy: MergeStrategy
  readonly targetSha: string
  readonly headSha: string
  readonly message: string
  /** Who merges: the committer of every new commit, the author of a merge commit. */
  readonly merger: GitIdentity
  /** The pull request's author: the author of a squashed commit (as on GitHub). */
  readonly prAuthor: GitIdentity
}

/**
 * The commit the target branch moves to for each strategy (GUIDE §11):
 * - `merge`: a merge commit with the target and the head as parents;
 * - `squash`: one commit on the target with the merged tree;
 * - `rebase`: every commit of the source (merge commits left out) replayed onto the target,
 *   author kept, the merger as committer.
 * New objects go to `objects.env`'s quarantine.
 */
export const buildMergeCommit = (objects: Objects, input: StrategyInput) =>
  Effect.gen(function*() {
    const now = new Date().toISOString()
    const committer = { ...input.merger, date: now }
    switch (input.strategy) {
      case "merge": {
        const tree = yield* mergeTrees(objects, input.targetSha, input.headSha)
        return yield* commitTree(objects, {
          tree,
          parents: [input.targetSha, input.headSha],
          message: input.message,
          author: committer,
          committer
        })
      }
      case "squash": {
        const tree = yield* mergeTrees(objects, input.targetSha, input.headSha)
        return yield* commitTree(objects, {
          tree,
          parents: [input.targetSha],
          message: input.message,
          author: { ...input.prAuthor, date: now },
          committer
        })
      }
      case "rebase":
        return yield* rebaseOnto(objects, input.targetSha, input.headSha, committer)
    }
  })

/** Replays the head's own commits onto `target`, one cherry-pick at a time. */
const rebaseOnto = (objects: Objects, target: string, head: string, committer: GitIdentity) =>
  Effect.gen(function*() {
    const commits = yield* commitsBetween(objects, target, head)
    let current = target
    let currentTree = yield* treeOf(objects, target)
    const trees = new Map(commits.map((commit) => [commit.sha, commit.tree]))
    for (const commit of commits) {
      const parent = commit.parents[0]
      const parentTree = parent === undefined
        ? yield* emptyTree(objects)
        : trees.get(parent) ?? (yield* treeOf(objects, parent))
      const tree = yield* cherryPickTree(objects, { ontoSha: current, ontoTree: currentTree, commit, parentTree })
      current = yield* commitTree(objects, {
        tree,
        parents: [current],
        message: commit.message,
        author: commit.author,
        committer
      })
      currentTree = tree
    }
    return current
  })

/** git's empty tree, written into the quarantine (the parent tree of a root commit). */
const emptyTree = (objects: Objects) =>
  gitText({ gitDir: objects.dir, env: objects.env, args: ["hash-object", "-t", "tree", "-w", "--stdin"], stdin: "" })
    .pipe(Effect.map((out) => out.trim()))
