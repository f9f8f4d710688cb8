import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { PullRequestClosed } from "../../schemas/pulls/PullRequestEvents.ts"
import { type AutoMergeRequest, MergeBlocked, type PullRequest } from "../../schemas/pulls/PullRequests.ts"
import { Repositories } from "../git/Repositories.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { actorInOrganization } from "../tenancy/Tenancy.ts"
import { Comments } from "./Comments.ts"
import { Merger } from "./Merger.ts"
import { publishPullRequestEvent } from "./PullEvents.ts"
import { closeStale, isOpen, loadById, markStale, setAutoMerge } from "./PullRequestRows.ts"
import { type PullContext, PullRequests } from "./PullRequests.ts"

const DAY_MS = 86_400_000

/**
 * What a pull request's entity does on its own (GUIDE §11):
 * - auto-merge: once enabled, merge as soon as every check passes (tried after every
 *   review, status and push); a merge that cannot happen (conflicts, a refusing branch)
 *   leaves a comment and turns auto-merge off;
 * - stale handling: after `warnAfterDays` without activity (commit, comment, review) the
 *   `stale` label and a comment, after `closeAfterDays` the request is closed with a
 *   comment. `staleTick` answers when it is next due, for the entity's durable timer.
 */
export class Automation extends Context.Service<Automation, {
  enableAutoMerge(pull: PullContext, actor: Actor, input: AutoMergeRequest): Effect.Effect<PullRequest, Conflict>
  disableAutoMerge(pull: PullContext): Effect.Effect<PullRequest>
  /** Merges when auto-merge is on and every check passes; true when it merged. */
  tryAutoMerge(prId: string): Effect.Effect<boolean>
  /** Warns or closes when due; answers when the next stale step is due (ms), or null. */
  staleTick(prId: string): Effect.Effect<number | null>
}>()("canopy/pulls/Automation") {
  static readonly layer = Layer.effect(
    Automation,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pulls = yield* PullRequests
      const repos = yield* Repositories
      const merger = yield* Merger
      const comments = yield* Comments
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)

      const enableAutoMerge = Effect.fn("Automation.enableAutoMerge")(
        function*(pull: PullContext, actor: Actor, input: AutoMergeRequest) {
          if (!isOpen(pull.row)) {
            return yield* new Conflict({ message: `Pull request #${pull.row.number} is ${pull.row.state}` })
          }
          const setting = {
            strategy: input.strategy ?? "merge",
            commitMessage: input.commitMessage ?? null,
            deleteBranch: input.deleteBranch ?? false,
            enabledBy: actor.id
          }
          yield* setAutoMerge(sql, pull.row.id, setting).pipe(Effect.orDie)
          return yield* pulls.render(pull.row.id).pipe(Effect.orDie)
        }
      )

      const disableAutoMerge = (pull: PullContext) =>
        setAutoMerge(sql, pull.row.id, null).pipe(
          Effect.orDie,
          Effect.andThen(pulls.render(pull.row.id).pipe(Effect.orDie))
        )

      /** The user who enabled auto-merge, with their role in the organization now. */
      const actorById = (userId: string, orgId: string) => actorInOrganization(sql, userId, orgId).pipe(Effect.orDie)

      /** Turns auto-merge off with a comment saying why. */
      const giveUp = (prId: string, headSha: string, reason: string) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* setAutoMerge(sql, prId, null)
          yield* withSql(comments.system(prId, headSha, `Auto-merge could not merge this pull request: ${reason}`))
        })).pipe(Effect.orDie)

      const tryAutoMerge = Effect.fn("Automation.tryAutoMerge")(function*(prId: string) {
        const row = yield* withSql(loadById(prId))
        if (Option.isNone(row) || row.value.auto_merge === null || row.value.state !== "open") return false
        const setting = row.value.auto_merge
        const enabler = yield* actorById(setting.enabledBy, row.value.org_id)
        if (enabler === undefined) return false
        return yield* merger.merge(prId, null, enabler, {
          strategy: setting.strategy,
          commitMessage: setting.commitMessage ?? undefined,
          deleteBranch: setting.deleteBranch
        }).pipe(
          Effect.as(true),
          Effect.catch((error) => {
            if (error instanceof MergeBlocked) {
              // Waiting for approvals or statuses is silent; a conflict will not resolve itself.
              const conflicts = error.checks.find((c) => c.name === "conflicts" && c.status === "failed")
              return conflicts === undefined ? Effect.succeed(false) : Effect.as(
                giveUp(prId, row.value.head_sha, conflicts.detail),
                false
              )
            }
            // Merged or closed meanwhile: nothing to say.
            if (error instanceof NotFound || /already (merged|closed)/.test(error.message)) return Effect.succeed(false)
            return Effect.as(giveUp(prId, row.value.head_sha, error.message), false)
          })
        )
      })

      const staleTick = Effect.fn("Automation.staleTick")(function*(prId: string) {
        const found = yield* pulls.findById(prId)
        if (Option.isNone(found) || !isOpen(found.value.row)) return null
        const { repo, row } = found.value
        const settings = Option.getOrUndefined(
          yield* Effect.option(Effect.map(repos.get(repo.orgId, repo.slug), (stored) => stored.stalePullRequests))
        )
        const now = yield* Clock.currentTimeMillis
        // Disabled: look again a day later (the setting may be turned back on).
        if (settings === undefined || !settings.enabled) return now + DAY_MS
        const since = row.last_activity_at.getTime()
        const warnAt = since + settings.warnAfterDays * DAY_MS
        const closeAt = since + settings.closeAfterDays * DAY_MS
        if (now >= closeAt) {
          yield* sql.withTransaction(Effect.gen(function*() {
            const closed = yield* closeStale(sql, row.id, row.last_activity_at, new Date(now))
            if (closed.length === 0) return
            yield* withSql(comments.system(
              row.id,
              row.head_sha,
              `Closed after ${settings.closeAfterDays} days without activity. Reopen it to continue.`
            ))
            const fresh = Option.getOrThrow(yield* withSql(loadById(row.id)))
            yield* withSql(publishPullRequestEvent(PullRequestClosed, repo, fresh, null, { merged: false }))
          })).pipe(Effect.orDie)
          return null
        }
        if (now >= warnAt && row.stale_warned_at === null) {
          yield* sql.withTransaction(Effect.gen(function*() {
            const warned = yield* markStale(sql, row.id, row.last_activity_at, new Date(now))
            if (warned.length === 0) return
            yield* withSql(comments.system(
              row.id,
              row.head_sha,
              `This pull request has had no activity for ${settings.warnAfterDays} days and is marked stale. ` +
                `It will be closed after ${settings.closeAfterDays} days without activity.`
            ))
          })).pipe(Effect.orDie)
          return closeAt
        }
        return row.stale_warned_at === null ? warnAt : closeAt
      })

      return Automation.of({ enableAutoMerge, disableAutoMerge, tryAutoMerge, staleTick })
    })
  )
}
