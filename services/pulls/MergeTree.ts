import { Data, Effect } from "effect"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { GitCommandError, gitText, runGitWithCode } from "../git/GitProcess.ts"
import { writeLooseCommit } from "../git/LooseCommit.ts"
import { packLooseObjects } from "../git/LoosePack.ts"
import type { Quarantine } from "../git/Quarantine.ts"

/**
 * Server-side merges with the `git` binary (GUIDE §11): merge-ort through
 * `git merge-tree --write-tree` (several merge bases are fine), commits written with
 * `git commit-tree`, new objects packed into the quarantine for `RefUpdates.apply`.
 * Every command runs with the quarantine's `env`, so nothing lands in the repository
 * until the ref update accepts it.
 */

/** The merge has conflicts in these paths. */
export class MergeConflict extends Data.TaggedError("MergeConflict")<{ readonly paths: ReadonlyArray<string> }> {}

export interface GitIdentity {
  readonly name: string
  readonly email: string
  /** ISO date; now when absent. */
  readonly date?: string | undefined
}

export interface Objects {
  readonly dir: string
  readonly env: Readonly<Record<string, string>>
}

/** merge-ort of two commits: the resulting tree, or the conflicting paths. */
export const mergeTrees = (objects: Objects, ours: string, theirs: string) =>
  Effect.gen(function*() {
    const args = ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs]
    // merge-tree exits 1 on conflicts, with its answer on stdout.
    const result = yield* runGitWithCode({ gitDir: objects.dir, args, env: objects.env })
    const [tree, ...paths] = result.stdout.toString("utf8").split("\0").filter((part) => part !== "")
    if (result.code === 0 && tree !== undefined) return tree
    if (result.code === 1 && tree !== undefined) return yield* new MergeConflict({ paths: [...new Set(paths)] })
    return yield* new GitCommandError({ args, code: result.code, stderr: result.stderr })
  })

const identityEnv = (author: GitIdentity, committer: GitIdentity): Record<string, string> => ({
  GIT_AUTHOR_NAME: author.name,
  GIT_AUTHOR_EMAIL: author.email,
  ...(author.date === undefined ? {} : { GIT_AUTHOR_DATE: author.date }),
  GIT_COMMITTER_NAME: committer.name,
  GIT_COMMITTER_EMAIL: committer.email,
  ...(committer.date === undefined ? {} : { GIT_COMMITTER_DATE: committer.date })
})

/**
 * Writes a commit of `tree` with `parents`; returns its id. Into a quarantine it is written
 * in process (`LooseCommit`) when git would store the identities as given; otherwise by
 * `git commit-tree`.
 */
export const commitTree = (
  objects: Objects,
  input: {
    readonly tree: string
    readonly parents: ReadonlyArray<string>
    readonly message: string
    readonly author: GitIdentity
    readonly committer: GitIdentity
  }
) =>
  Effect.gen(function*() {
    const objectsDir = objects.env.GIT_OBJECT_DIRECTORY
    const written = objectsDir === undefined ?
      undefined :
      yield* Effect.promise(() => writeLooseCommit(objectsDir, input))
    if (written !== undefined) return written
    return yield* gitText({
      gitDir: objects.dir,
      env: { ...objects.env, ...identityEnv(input.author, input.committer) },
      args: ["commit-tree", input.tree, ...input.parents.flatMap((parent) => ["-p", parent])],
      stdin: input.message.endsWith("\n") ? input.message : `${input.message}\n`
    }).pipe(Effect.map((out) => out.trim()))
  })

export interface CommitInfo {
  readonly sha: string
  readonly parents: ReadonlyArray<string>
  readonly tree: string
  readonly author: GitIdentity
  readonly message: string
}

const FIELD = "\x1f"
const RECORD = "\x1e"

/** The commits `head` has that `base` has not, oldest first (merge commits left out). */
export const commitsBetween = (objects: Objects, base: string, head: string) =>
  gitText({
    gitDir: objects.dir,
    env: objects.env,
    args: [
      "log",
      "--reverse",
      "--topo-order",
      "--no-merges",
      `--format=%H${FIELD}%P${FIELD}%T${FIELD}%an${FIELD}%ae${FIELD}%aI${FIELD}%B${RECORD}`,
      head,
      "--not",
      base
    ]
  }).pipe(Effect.map((text) =>
    text.split(RECORD).map((record) => record.replace(/^\n/, "")).filter((record) => record !== "").map(
      (record): CommitInfo => {
        const [sha, parents, tree, name, email, date, message] = record.split(FIELD)
        return {
          sha,
          parents: parents === "" ? [] : parents.split(" "),
          tree,
          author: { name, email, date },
          message: message.replace(/\n+$/, "")
        }
      }
    )
  ))

/** The tree of a commit. */
export const treeOf = (objects: Objects, commit: string) =>
  gitText({ gitDir: objects.dir, env: objects.env, args: ["rev-parse", `${commit}^{tree}`] }).pipe(
    Effect.map((out) => out.trim())
  )

/**
 * The tree of `commit` replayed onto `onto` (a cherry-pick): a three-way merge of `onto`'s
 * tree and `commit`'s tree with `commit`'s parent as the base. git 2.39's merge-tree has no
 * `--merge-base`, so the base is imposed through two throw-away commits sharing a root
 * commit of the parent's tree (deleted from the quarantine afterwards: never stored).
 */
export const cherryPickTree = (
  objects: Objects,
  input: {
    readonly ontoSha: string
    readonly ontoTree: string
    readonly commit: CommitInfo
    readonly parentTree: string
  }
) =>
  Effect.gen(function*() {
    if (input.ontoTree === input.parentTree) return input.commit.tree
    const someone = { name: "canopy", email: "canopy@localhost", date: "1970-01-01T00:00:00Z" }
    const make = (tree: string, parents: ReadonlyArray<string>) =>
      commitTree(objects, { tree, parents, message: "replay", author: someone, committer: someone })
    const base = yield* make(input.parentTree, [])
    const ours = yield* make(input.ontoTree, [base])
    const theirs = yield* make(input.commit.tree, [base])
    return yield* mergeTrees(objects, ours, theirs).pipe(
      // Not part of the result: removed, so the quarantine's loose objects are exactly what is stored.
      Effect.ensuring(Effect.promise(() => {
        const dir = objects.env.GIT_OBJECT_DIRECTORY
        if (dir === undefined) return Promise.resolve()
        return Promise.all(
          [base, ours, theirs].map((sha) => FsP.rm(Path.join(dir, sha.slice(0, 2), sha.slice(2)), { force: true }))
        ).then(() => undefined)
      }))
    )
  })

/** Every loose object in the quarantine: what the merge wrote (trees, merged blobs, commits). */
const looseObjects = (quarantine: Quarantine) =>
  Effect.promise(async () => {
    const root = Path.join(quarantine.dir, "objects")
    const shas: Array<string> = []
    for (const dir of await FsP.readdir(root)) {
      if (!/^[0-9a-f]{2}$/.test(dir)) continue
      for (const file of await FsP.readdir(Path.join(root, dir))) shas.push(`${dir}${file}`)
    }
    return shas
  })

/**
 * Packs the objects the merge wrote into the quarantine (all of its loose objects: no
 * history walk), as a push's pack would be; `RefUpdates.apply` checks that the new tip is
 * connected and stores the pack with the ref update. Written in process (`LoosePack`):
 * a handful of objects, no deltas, no git process to start.
 */
export const packNewObjects = (quarantine: Quarantine) =>
  Effect.gen(function*() {
    const objectsDir = Path.join(quarantine.dir, "objects")
    const shas = yield* looseObjects(quarantine)
    const pack = yield* Effect.promise(() => packLooseObjects(objectsDir, shas, Path.join(objectsDir, "pack")))
    return { ...quarantine, pack } satisfies Quarantine
  })
