import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { PullRequestClosed, PullRequestOpened, PullRequestUpdated } from "../../schemas/pulls/PullRequestEvents.ts"
import type {
  ChangedFiles,
  CreatePullRequest,
  PullRequest,
  PullRequestList,
  UpdatePullRequest
} from "../../schemas/pulls/PullRequests.ts"
import { RepoCache } from "../git/RepoCache.ts"
import { branchSha, refuseArchived, type RepoRecord, Repositories } from "../git/Repositories.ts"
import { nextNumber } from "../git/RepositoryNumbers.ts"
import { makeId } from "../platform/Ids.ts"
import { isUniqueViolation } from "../platform/Rows.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { insertComment } from "./CommentRows.ts"
import { diffAgainstMergeBase, parseDiff } from "./PullDiff.ts"
import { publishPullRequestEvent } from "./PullEvents.ts"
import {
  closeAllOpen,
  insertPullRequest,
  isOpen,
  loadById,
  loadByNumber,
  moveToOrganization,
  type PrRow,
  pullRequestsOf,
  toPullRequest,
  updatePullRequest
} from "./PullRequestRows.ts"

/** A pull request with its repository, as the other pull request services need them. */
export interface PullContext {
  readonly repo: RepoRecord
  readonly row: PrRow
}

const branchMissing = (field: string, branch: string) =>
  new ValidationError({
    message: `Branch '${branch}' does not exist`,
    details: [{ path: `body.${field}`, message: `branch '${branch}' does not exist` }]
  })

/**
 * Pull requests of a repository (GUIDE §11): create, list, read, edit, close and reopen,
 * and the changes against the merge base. Every method is scoped by organization; another
 * organization's repository or pull request is a `NotFound`. Mergeability and merge checks
 * are computed by the pull request's entity after each change (see `Mergeability.ts`).
 */
export class PullRequests extends Context.Service<PullRequests, {
  create(orgId: string, repoSlug: string, actor: Actor, input: CreatePullRequest): Effect.Effect<
    PullRequest,
    NotFound | ValidationError | Conflict
  >
  list(orgId: string, repoSlug: string, state: string | undefined): Effect.Effect<PullRequestList, NotFound>
  get(orgId: string, repoSlug: string, number: number): Effect.Effect<PullRequest, NotFound>
  update(orgId: string, repoSlug: string, number: number, actor: Actor, patch: UpdatePullRequest): Effect.Effect<
    PullRequest,
    NotFound | Conflict
  >
  files(orgId: string, repoSlug: string, number: number): Effect.Effect<ChangedFiles, NotFound>
  diff(orgId: string, repoSlug: string, number: number): Effect.Effect<string, NotFound>
  /** Internal: the pull request and its repository, scoped by organization. */
  find(orgId: string, repoSlug: string, number: number): Effect.Effect<PullContext, NotFound>
  /** Internal: by id, any organization (entities). */
  findById(id: string): Effect.Effect<Option.Option<PullContext>>
  /** Internal: the wire form of a row. */
  render(id: string): Effect.Effect<PullRequest, NotFound>
  /**
   * Internal (repository archived or deleted, in the caller's transaction): closes every open
   * pull request with a comment saying why and `pull_request.closed`; the ids closed.
   */
  closeForRepository(
    repo: RepoRecord,
    why: string,
    sender: { readonly id: string; readonly name: string } | null
  ): Effect.Effect<ReadonlyArray<string>, never, SqlClient.SqlClient>
  /** Internal (repository transfer, in the caller's transaction): the pull requests move with it. */
  moveRepository(repoId: string, toOrgId: string): Effect.Effect<void, never, SqlClient.SqlClient>
}>()("canopy/pulls/PullRequests") {
  static readonly layer = Layer.effect(
    PullRequests,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repos = yield* Repositories
      const cache = yield* RepoCache
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)
      const notFound = (number: number) => new NotFound({ message: `Pull request #${number} not found` })

      const find = Effect.fn("PullRequests.find")(function*(orgId: string, repoSlug: string, number: number) {
        const repo = yield* repos.record(orgId, repoSlug)
        const row = yield* withSql(loadByNumber(repo.id, number))
        if (Option.isNone(row)) return yield* notFound(number)
        return { repo, row: row.value }
      })

      const findById = (id: string) =>
        Effect.gen(function*() {
          const row = yield* withSql(loadById(id))
          if (Option.isNone(row)) return Option.none<PullContext>()
          const repo = yield* repos.findById(row.value.repo_id)
          return Option.map(repo, (repo) => ({ repo, row: row.value }))
        })

      const render = (id: string) =>
        Effect.flatMap(withSql(loadById(id)), (row) =>
          Option.isSome(row)
            ? Effect.succeed(toPullRequest(row.value))
            : Effect.fail(new NotFound({ message: "Pull request not found" })))

      const branchHead = (repoId: string, branch: string) => branchSha(sql, repoId, branch).pipe(Effect.orDie)

      const create = Effect.fn("PullRequests.create")(
        function*(orgId: string, repoSlug: string, actor: Actor, input: CreatePullRequest) {
          const repo = yield* repos.record(orgId, repoSlug)
          yield* refuseArchived(repo)
          const target = input.targetBranch ?? repo.defaultBranch
          const head = yield* branchHead(repo.id, input.sourceBranch)
          if (Option.isNone(head)) return yield* branchMissing("sourceBranch", input.sourceBranch)
          const base = yield* branchHead(repo.id, target)
          if (Option.isNone(base)) return yield* branchMissing("targetBranch", target)
          if (target === input.sourceBranch) {
            return yield* new ValidationError({
              message: "The source and target branches are the same",
              details: [{ path: "body.targetBranch", message: "must differ from sourceBranch" }]
            })
          }
          const id = makeId("pr")
          const state = input.isDraft === true ? "draft" : "open"
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* sql.withTransaction(Effect.gen(function*() {
            const number = yield* withSql(nextNumber(repo.id))
            yield* insertPullRequest(sql, {
              id,
              repoId: repo.id,
              orgId: repo.orgId,
              number,
              title: input.title,
              body: input.body ?? "",
              state,
              sourceBranch: input.sourceBranch,
              targetBranch: target,
              authorId: actor.id,
              baseSha: base.value,
              headSha: head.value,
              now
            })
            const row = yield* withSql(loadById(id))
            yield* withSql(publishPullRequestEvent(PullRequestOpened, repo, Option.getOrThrow(row), actor, {}))
          })).pipe(
            Effect.catchTag("SqlError", (error) =>
              isUniqueViolation(error)
                ? Effect.fail(
                  new Conflict({
                    message: `An open pull request from '${input.sourceBranch}' into '${target}' already exists`
                  })
                )
                : Effect.die(error))
          )
          return yield* Effect.orDie(render(id))
        }
      )

      const list = Effect.fn("PullRequests.list")(
        function*(orgId: string, repoSlug: string, state: string | undefined) {
          const repo = yield* repos.record(orgId, repoSlug)
          const rows = yield* pullRequestsOf(sql, repo.id, state)
          return { pullRequests: rows.map(toPullRequest), count: rows.length }
        }
      )

      const get = Effect.fn("PullRequests.get")(function*(orgId: string, repoSlug: string, number: number) {
        return toPullRequest((yield* find(orgId, repoSlug, number)).row)
      })

      const update = Effect.fn("PullRequests.update")(
        function*(orgId: string, repoSlug: string, number: number, actor: Actor, patch: UpdatePullRequest) {
          const { repo, row } = yield* find(orgId, repoSlug, number)
          yield* refuseArchived(repo)
          if (!isOpen(row) && (patch.isDraft !== undefined || (patch.state !== undefined && row.state === "merged"))) {
            return yield* new Conflict({ message: `Pull request #${number} is ${row.state}` })
          }
          let state = row.state
          if (patch.state === "closed") state = "closed"
          else if (patch.state === "open" && row.state === "closed") state = "open"
          if (patch.isDraft !== undefined && (state === "open" || state === "draft")) {
            state = patch.isDraft ? "draft" : "open"
          }
          const title = patch.title ?? row.title
          const body = patch.body ?? row.body
          const changes = [
            ...(title !== row.title ? ["title"] : []),
            ...(body !== row.body ? ["body"] : []),
            ...(state !== row.state && (state === "draft" || row.state === "draft") ? ["isDraft"] : [])
          ]
          const now = new Date(yield* Clock.currentTimeMillis)
          const reopening = row.state === "closed" && state === "open"
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* updatePullRequest(sql, row.id, {
              title,
              body,
              state,
              closedAt: state === "closed" ? (row.closed_at ?? now) : null,
              autoMerge: state === "closed" ? null : row.auto_merge,
              lastActivityAt: reopening ? now : row.last_activity_at,
              staleWarnedAt: reopening ? null : row.stale_warned_at,
              now
            })
            const fresh = Option.getOrThrow(yield* withSql(loadById(row.id)))
            if (state === "closed" && row.state !== "closed") {
              yield* withSql(publishPullRequestEvent(PullRequestClosed, repo, fresh, actor, { merged: false }))
            } else if (reopening) {
              yield* withSql(publishPullRequestEvent(PullRequestOpened, repo, fresh, actor, {}))
            }
            if (changes.length > 0) {
              yield* withSql(
                publishPullRequestEvent(PullRequestUpdated, repo, fresh, actor, { before: null, after: null, changes })
              )
            }
          })).pipe(
            Effect.catchTag("SqlError", (error) =>
              isUniqueViolation(error)
                ? Effect.fail(new Conflict({ message: "Another open pull request has the same branches" }))
                : Effect.die(error))
          )
          return yield* Effect.orDie(render(row.id))
        }
      )

      const diffText = (orgId: string, repoSlug: string, number: number) =>
        Effect.gen(function*() {
          const { repo, row } = yield* find(orgId, repoSlug, number)
          // A merged request shows what it merged: its head against the target before the merge.
          return yield* cache.use(repo, (synced) =>
            diffAgainstMergeBase({ dir: synced.dir, env: {} }, row.base_sha, row.head_sha)).pipe(Effect.orDie)
        })

      const files = Effect.fn("PullRequests.files")(function*(orgId: string, repoSlug: string, number: number) {
        const parsed = parseDiff(yield* diffText(orgId, repoSlug, number))
        return { files: parsed, count: parsed.length }
      })

      const diff = Effect.fn("PullRequests.diff")(function*(orgId: string, repoSlug: string, number: number) {
        return yield* diffText(orgId, repoSlug, number)
      })

      const closeForRepository = (
        repo: RepoRecord,
        why: string,
        sender: { readonly id: string; readonly name: string } | null
      ) =>
        Effect.gen(function*() {
          const client = yield* SqlClient.SqlClient
          const now = new Date(yield* Clock.currentTimeMillis)
          const closed = yield* closeAllOpen(client, repo.id, now).pipe(Effect.orDie)
          for (const { id } of closed) {
            const row = Option.getOrThrow(yield* loadById(id).pipe(Effect.orDie))
            yield* insertComment(client, {
              id: makeId("cmt"),
              prId: id,
              authorId: null,
              body: why,
              path: null,
              line: null,
              startLine: null,
              headSha: row.head_sha,
              now
            }).pipe(Effect.orDie)
            yield* publishPullRequestEvent(PullRequestClosed, repo, row, sender, { merged: false }).pipe(Effect.orDie)
          }
          return closed.map((row) => row.id)
        })

      const moveRepository = (repoId: string, toOrgId: string) =>
        Effect.flatMap(SqlClient.SqlClient, (client) => moveToOrganization(client, repoId, toOrgId)).pipe(
          Effect.asVoid,
          Effect.orDie
        )

      return PullRequests.of({
        create,
        list,
        get,
        update,
        files,
        diff,
        find,
        findById,
        render,
        closeForRepository,
        moveRepository
      })
    })
  )
}

/** The pull request reads other features (AI review) share, in the caller's transaction. */
export { eventRepository, isOpen, openAtHead, type PrRow, toEventPullRequest } from "./PullRequestRows.ts"
