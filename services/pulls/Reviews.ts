import { Array as Arr, Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { PullRequestReviewSubmitted } from "../../schemas/pulls/PullRequestEvents.ts"
import type { CreateReview, Review, ReviewList, ReviewState } from "../../schemas/pulls/PullRequests.ts"
import { makeId } from "../platform/Ids.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { membersByUsername } from "../tenancy/Tenancy.ts"
import { publishPullRequestEvent, publishReviewRequested } from "./PullEvents.ts"
import { isOpen, loadById, personOf, touchActivity } from "./PullRequestRows.ts"
import { type PullContext, PullRequests } from "./PullRequests.ts"
import {
  deleteReviewRequests,
  dismissReview,
  insertReview,
  insertReviewRequests,
  reviewById,
  type ReviewRow,
  reviewsOf,
  submitReview
} from "./ReviewRows.ts"

const toReview = (row: ReviewRow): Review => ({
  id: row.id,
  state: row.state,
  body: row.body,
  reviewer: personOf({ id: row.reviewer_id, username: row.username, name: row.name, email: row.email }),
  headSha: row.head_sha,
  submittedAt: row.submitted_at?.toISOString() ?? null,
  dismissed: row.dismissed_at !== null,
  dismissMessage: row.dismiss_message,
  createdAt: row.created_at.toISOString()
})

/**
 * Reviews and review requests (GUIDE §11). A review is stored with the head it was given
 * on; `pending` ones are the reviewer's draft until submitted. Which reviews count is the
 * merge checks' business (`MergeChecks.gatherReviews`). Callers re-evaluate the pull
 * request afterwards (its entity's `Refresh`).
 */
export class Reviews extends Context.Service<Reviews, {
  list(pull: PullContext): Effect.Effect<ReviewList>
  create(pull: PullContext, actor: Actor, input: CreateReview): Effect.Effect<Review, Conflict>
  submit(
    pull: PullContext,
    actor: Actor,
    reviewId: string,
    input: { readonly state?: ReviewState | undefined; readonly body?: string | undefined }
  ): Effect.Effect<Review, NotFound | Conflict | ValidationError>
  dismiss(pull: PullContext, reviewId: string, message: string): Effect.Effect<Review, NotFound | Conflict>
  request(
    pull: PullContext,
    actor: Actor | null,
    usernames: ReadonlyArray<string>,
    source: "manual" | "codeowners"
  ): Effect.Effect<ReadonlyArray<string>, ValidationError>
  unrequest(pull: PullContext, usernames: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>>
}>()("canopy/pulls/Reviews") {
  static readonly layer = Layer.effect(
    Reviews,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pulls = yield* PullRequests
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)
      const load = (prId: string, id: string) =>
        reviewById(sql, prId, id).pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows.length === 0
              ? Effect.fail(new NotFound({ message: `Review '${id}' not found` }))
              : Effect.succeed(rows[0])
          )
        )
      const requireOpen = (pull: PullContext) =>
        isOpen(pull.row)
          ? Effect.void
          : Effect.fail(new Conflict({ message: `Pull request #${pull.row.number} is ${pull.row.state}` }))

      /** Activity (stale handling) and the `review_submitted` event, in the caller's transaction. */
      const submitted = (pull: PullContext, actor: Actor, review: ReviewRow) =>
        Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* touchActivity(sql, pull.row.id, now)
          const fresh = Option.getOrThrow(yield* withSql(loadById(pull.row.id)))
          yield* withSql(publishPullRequestEvent(PullRequestReviewSubmitted, pull.repo, fresh, actor, {
            review: { id: review.id, state: review.state, body: review.body, reviewer: actor.username }
          }))
        })

      const list = (pull: PullContext) =>
        reviewsOf(sql, pull.row.id).pipe(
          Effect.orDie,
          Effect.map((rows) => ({ reviews: rows.map(toReview), count: rows.length }))
        )

      const create = Effect.fn("Reviews.create")(function*(pull: PullContext, actor: Actor, input: CreateReview) {
        yield* requireOpen(pull)
        const id = makeId("rev")
        const now = new Date(yield* Clock.currentTimeMillis)
        const submittedAt = input.state === "pending" ? null : now
        const review = yield* sql.withTransaction(Effect.gen(function*() {
          yield* insertReview(sql, {
            id,
            prId: pull.row.id,
            reviewerId: actor.id,
            state: input.state,
            body: input.body ?? "",
            headSha: pull.row.head_sha,
            submittedAt,
            now
          })
          const row = yield* load(pull.row.id, id)
          if (submittedAt !== null) yield* submitted(pull, actor, row)
          return row
        })).pipe(Effect.orDie)
        return toReview(review)
      })

      const submit = Effect.fn("Reviews.submit")(function*(
        pull: PullContext,
        actor: Actor,
        reviewId: string,
        input: { readonly state?: ReviewState | undefined; readonly body?: string | undefined }
      ) {
        yield* requireOpen(pull)
        const current = yield* load(pull.row.id, reviewId)
        if (current.reviewer_id !== actor.id) return yield* new NotFound({ message: `Review '${reviewId}' not found` })
        if (current.submitted_at !== null) return yield* new Conflict({ message: "The review is already submitted" })
        const state = input.state ?? "commented"
        if (state === "pending") {
          return yield* new ValidationError({
            message: "A review is submitted as approved, changes_requested or commented",
            details: [{ path: "body.state", message: "must not be pending" }]
          })
        }
        const now = new Date(yield* Clock.currentTimeMillis)
        const review = yield* sql.withTransaction(Effect.gen(function*() {
          yield* submitReview(sql, reviewId, {
            state,
            body: input.body ?? current.body,
            headSha: pull.row.head_sha,
            now
          })
          const row = yield* load(pull.row.id, reviewId)
          yield* submitted(pull, actor, row)
          return row
        })).pipe(Effect.orDie)
        return toReview(review)
      })

      const dismiss = Effect.fn("Reviews.dismiss")(function*(pull: PullContext, reviewId: string, message: string) {
        yield* requireOpen(pull)
        const current = yield* load(pull.row.id, reviewId)
        if (current.submitted_at === null) {
          return yield* new Conflict({ message: "A pending review cannot be dismissed" })
        }
        if (current.dismissed_at !== null) return yield* new Conflict({ message: "The review is already dismissed" })
        const now = new Date(yield* Clock.currentTimeMillis)
        yield* dismissReview(sql, reviewId, message, now).pipe(Effect.orDie)
        return toReview(yield* load(pull.row.id, reviewId))
      })

      const request = Effect.fn("Reviews.request")(function*(
        pull: PullContext,
        actor: Actor | null,
        usernames: ReadonlyArray<string>,
        source: "manual" | "codeowners"
      ) {
        const wanted = [...new Set(usernames)]
        const users = yield* membersByUsername(sql, pull.repo.orgId, wanted).pipe(Effect.orDie)
        const unknown = wanted.filter((name) => !users.some((user) => user.username === name))
        if (unknown.length > 0 && source === "manual") {
          return yield* new ValidationError({
            message: `Unknown reviewers: ${unknown.join(", ")}`,
            details: unknown.map((name) => ({ path: "body.reviewers", message: `'${name}' is not a member` }))
          })
        }
        const author = users.find((user) => user.id === pull.row.author_id)
        if (author !== undefined && source === "manual") {
          return yield* new ValidationError({
            message: "The author cannot be requested to review their own pull request",
            details: [{ path: "body.reviewers", message: `'${author.username}' is the author` }]
          })
        }
        const candidates = users.filter((user) => user.id !== pull.row.author_id)
        if (!Arr.isReadonlyArrayNonEmpty(candidates)) return []
        const added = yield* sql.withTransaction(Effect.gen(function*() {
          const inserted = yield* insertReviewRequests(sql, pull.row.id, Arr.map(candidates, (user) => user.id), source)
          const names = candidates.filter((user) => inserted.some((row) => row.user_id === user.id)).map((u) =>
            u.username
          )
          const fresh = Option.getOrThrow(yield* withSql(loadById(pull.row.id)))
          yield* withSql(publishReviewRequested(pull.repo, fresh, actor, names))
          return names
        })).pipe(Effect.orDie)
        return added
      })

      const unrequest = Effect.fn("Reviews.unrequest")(function*(pull: PullContext, usernames: ReadonlyArray<string>) {
        yield* deleteReviewRequests(sql, pull.row.id, usernames).pipe(Effect.orDie)
        const fresh = yield* pulls.render(pull.row.id).pipe(Effect.orDie)
        return fresh.requestedReviewers
      })

      return Reviews.of({ list, create, submit, dismiss, request, unrequest })
    })
  )
}
