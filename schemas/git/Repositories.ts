import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

/**
 * Repositories and their refs (spec 001 "Repository", GUIDE §8).
 *
 * Wire choices where the spec is silent:
 * - `name` is a URL slug (letters, digits, `.`, `_`, `-`; not ending in `.git`); `slug`
 *   is its lowercase form, unique per organization and used in paths and clone URLs.
 * - `description` is `null` when unset; `archived`, `cloneUrl` and `storageBytes` are
 *   returned too.
 */

export const Visibility = Schema.Literals(["private", "public"])
export type Visibility = typeof Visibility.Type

export const RepositoryName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
    message: "must be 1-100 characters of letters, digits, '.', '_' and '-', starting with a letter or digit"
  }),
  Schema.makeFilter((name: string) => !name.toLowerCase().endsWith(".git") || "must not end in .git")
)

/** A branch name git accepts (`git check-ref-format --branch`), checked conservatively. */
export const BranchName = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(200),
  Schema.makeFilter((name: string) => isValidBranchName(name) || "is not a valid branch name")
)

export const isValidBranchName = (name: string): boolean =>
  name.length > 0 && name.length <= 200 && !/[\x00-\x20\x7f~^:?*[\\]/.test(name) && !name.startsWith("-") &&
  !name.startsWith("/") && !name.endsWith("/") && !name.endsWith(".") && !name.includes("..") &&
  !name.includes("//") && !name.includes("@{") && name !== "@" &&
  name.split("/").every((part) => !part.startsWith(".") && !part.endsWith(".lock"))

const Description = Schema.String.check(Schema.isMaxLength(1000))

/** Stale pull requests (GUIDE §11): label and comment after `warnAfterDays`, close after `closeAfterDays`. */
export const StalePullRequests = Schema.Struct({
  enabled: Schema.Boolean,
  warnAfterDays: Schema.Int,
  closeAfterDays: Schema.Int
})
const Days = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3650 }))
export const StalePullRequestsPatch = Schema.Struct({
  enabled: Schema.optionalKey(Schema.Boolean),
  warnAfterDays: Schema.optionalKey(Days),
  closeAfterDays: Schema.optionalKey(Days)
})

export const Repository = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  fullName: Schema.String,
  description: Schema.NullOr(Schema.String),
  visibility: Visibility,
  defaultBranch: Schema.String,
  allowForking: Schema.Boolean,
  archived: Schema.Boolean,
  cloneUrl: Schema.String,
  storageBytes: Schema.Number,
  stalePullRequests: StalePullRequests,
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type Repository = typeof Repository.Type

export const CreateRepository = Schema.Struct({
  name: RepositoryName,
  description: Schema.optional(Schema.NullOr(Description)),
  visibility: Schema.optional(Visibility),
  defaultBranch: Schema.optional(BranchName),
  allowForking: Schema.optional(Schema.Boolean)
})
export type CreateRepository = typeof CreateRepository.Type

export const UpdateRepository = Schema.Struct({
  description: Schema.optional(Schema.NullOr(Description)),
  visibility: Schema.optional(Visibility),
  defaultBranch: Schema.optional(BranchName),
  allowForking: Schema.optional(Schema.Boolean),
  stalePullRequests: Schema.optionalKey(StalePullRequestsPatch),
  /** Read-only when true (GUIDE §16): fetches work, every write answers 409; open pull requests close. */
  archived: Schema.optional(Schema.Boolean)
})
export type UpdateRepository = typeof UpdateRepository.Type

export const RepositoryList = Schema.Struct({
  repositories: Schema.Array(Repository),
  count: Schema.Int
})
export type RepositoryList = typeof RepositoryList.Type

export const Branch = Schema.Struct({
  name: Schema.String,
  commitSha: Schema.String,
  isDefault: Schema.Boolean,
  protected: Schema.Boolean
})
export const BranchList = Schema.Struct({ branches: Schema.Array(Branch), count: Schema.Int })
export type BranchList = typeof BranchList.Type

export const Tag = Schema.Struct({
  name: Schema.String,
  /** The object the tag ref points at (an annotated tag object or a commit). */
  sha: Schema.String,
  /** The commit it peels to. */
  commitSha: Schema.String
})
export const TagList = Schema.Struct({ tags: Schema.Array(Tag), count: Schema.Int })
export type TagList = typeof TagList.Type

export const TreeEntry = Schema.Struct({
  name: Schema.String,
  path: Schema.String,
  type: Schema.Literals(["blob", "tree", "commit"]),
  mode: Schema.String,
  sha: Schema.String,
  /** Bytes, for blobs. */
  size: Schema.NullOr(Schema.Number)
})
export const Tree = Schema.Struct({
  ref: Schema.String,
  commitSha: Schema.String,
  path: Schema.String,
  entries: Schema.Array(TreeEntry)
})
export type Tree = typeof Tree.Type

export const Blob = Schema.Struct({
  ref: Schema.String,
  commitSha: Schema.String,
  path: Schema.String,
  sha: Schema.String,
  size: Schema.Number,
  /** `utf-8` text, or `base64` for binary content. */
  encoding: Schema.Literals(["utf-8", "base64"]),
  content: Schema.String
})
export type Blob = typeof Blob.Type

export const GitPerson = Schema.Struct({ name: Schema.String, email: Schema.String, date: Schema.String })
export const Commit = Schema.Struct({
  sha: Schema.String,
  message: Schema.String,
  author: GitPerson,
  committer: GitPerson,
  parents: Schema.Array(Schema.String)
})
export type Commit = typeof Commit.Type
export const CommitList = Schema.Struct({
  commits: Schema.Array(Commit),
  /** Commits reachable from the listed ref (all pages). */
  count: Schema.Int,
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: Schema.NullOr(Schema.String)
})
export type CommitList = typeof CommitList.Type

const pageLimit = Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))

export const CommitsQuery = {
  ref: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(250))),
  limit: pageLimit,
  /** The `nextCursor` of the previous page: the same walk (pinned to its first page's commit) continued. */
  cursor: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)))
}

/** `limit` (1–100, default 100) and `offset` of a list (GUIDE §4: `count` is the total, not the page's length). */
export const PageQuery = {
  limit: pageLimit,
  offset: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
}
export interface Page {
  readonly limit?: number | undefined
  readonly offset?: number | undefined
}

const EventRepository = Schema.Struct({ id: Schema.String, name: Schema.String, fullName: Schema.String })
const EventSender = Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String, email: Schema.String }))

/** The `push` domain event (spec 001 "Events"), published in the ref update's transaction. */
export const PushEvent = eventType(
  "push",
  Schema.Struct({
    repository: EventRepository,
    sender: EventSender,
    ref: Schema.String,
    before: Schema.String,
    after: Schema.String,
    commits: Schema.Array(Schema.Struct({
      sha: Schema.String,
      message: Schema.String,
      author: Schema.Struct({ name: Schema.String, email: Schema.String }),
      timestamp: Schema.String
    })),
    timestamp: Schema.String
  })
)
export type PushEventData = typeof PushEvent.data.Type

/** `create` and `delete` of a branch or tag (`ref` is the short name). */
const RefEventData = Schema.Struct({
  repository: EventRepository,
  sender: EventSender,
  ref: Schema.String,
  refType: Schema.Literals(["branch", "tag"]),
  sha: Schema.String,
  timestamp: Schema.String
})
export const CreateEvent = eventType("create", RefEventData)
export const DeleteEvent = eventType("delete", RefEventData)

/** A repository created, updated or deleted (published in the transaction of the change). */
export const RepositoryChangedEvent = eventType(
  "repository.changed",
  Schema.Struct({ repoId: Schema.String, change: Schema.Literals(["created", "updated", "deleted"]) })
)
