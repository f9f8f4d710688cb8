import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { refuseArchived } from "../../../services/git/Repositories.ts"
import { Automation } from "../../../services/pulls/Automation.ts"
import { Comments } from "../../../services/pulls/Comments.ts"
import { PullRequestCommands } from "../../../services/pulls/PullRequestCommands.ts"
import { PullRequests } from "../../../services/pulls/PullRequests.ts"
import { Reviews } from "../../../services/pulls/Reviews.ts"
import { Suggestions } from "../../../services/pulls/Suggestions.ts"
import { actorOf } from "../../../services/tenancy/Actor.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

interface PullParams {
  readonly org: string
  readonly repo: string
  readonly number: number
}

export const PullRequestsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "pullRequests",
  Effect.fn(function*(handlers) {
    const pulls = yield* PullRequests
    const reviews = yield* Reviews
    const comments = yield* Comments
    const automation = yield* Automation
    const suggestions = yield* Suggestions
    const commands = yield* PullRequestCommands
    const actor = Effect.map(CurrentPrincipal, actorOf)
    const find = (params: PullParams) =>
      Effect.flatMap(ownOrg(params), (org) => pulls.find(org, params.repo, params.number))
    // GUIDE §16: an archived repository's pull requests take no merges, reviews or comments (409).
    const findWritable = (params: PullParams) => Effect.tap(find(params), (pull) => refuseArchived(pull.repo))

    const nudge = commands.refresh
    const after = <A>(prId: (a: A) => string) => <E, R>(self: Effect.Effect<A, E, R>) =>
      Effect.tap(self, (a) => Effect.flatMap(actor, (who) => nudge(prId(a), { id: who.id, name: who.name })))

    return handlers.handleAll({
      list: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => pulls.list(org, params.repo, query.state)),
      create: ({ params, payload }) =>
        Effect.gen(function*() {
          const org = yield* ownOrg(params)
          return yield* pulls.create(org, params.repo, yield* actor, payload)
        }).pipe(after((pr) => pr.id)),
      get: ({ params }) =>
        Effect.flatMap(ownOrg(params), (org) => pulls.get(org, params.repo, params.number)).pipe(
          // Unknown mergeability (the target moved): computed now, answered `null` meanwhile.
          Effect.tap((pr) =>
            pr.mergeable === null && (pr.state === "open" || pr.state === "draft") ? nudge(pr.id, null) : Effect.void
          )
        ),
      update: ({ params, payload }) =>
        Effect.gen(function*() {
          const org = yield* ownOrg(params)
          return yield* pulls.update(org, params.repo, params.number, yield* actor, payload)
        }).pipe(after((pr) => pr.id)),
      files: ({ params }) => Effect.flatMap(ownOrg(params), (org) => pulls.files(org, params.repo, params.number)),
      diff: ({ params }) => Effect.flatMap(ownOrg(params), (org) => pulls.diff(org, params.repo, params.number)),
      merge: ({ params, payload }) =>
        Effect.gen(function*() {
          const { row } = yield* findWritable(params)
          const who = yield* actor
          return yield* commands.merge({ id: row.id, repoId: row.repo_id }, {
            actor: who,
            strategy: payload.strategy ?? "merge",
            commitMessage: payload.commitMessage ?? null,
            deleteBranch: payload.deleteBranch ?? false
          })
        }),
      enableAutoMerge: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* findWritable(params)
          return yield* automation.enableAutoMerge(pull, yield* actor, payload)
        }).pipe(after((pr) => pr.id)),
      disableAutoMerge: ({ params }) => Effect.flatMap(find(params), automation.disableAutoMerge),
      reviews: ({ params }) => Effect.flatMap(find(params), reviews.list),
      createReview: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* findWritable(params)
          const review = yield* reviews.create(pull, yield* actor, payload)
          return { review, prId: pull.row.id }
        }).pipe(after((r) => r.prId), Effect.map((r) => r.review)),
      submitReview: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* findWritable(params)
          const review = yield* reviews.submit(pull, yield* actor, params.reviewId, payload)
          return { review, prId: pull.row.id }
        }).pipe(after((r) => r.prId), Effect.map((r) => r.review)),
      dismissReview: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* findWritable(params)
          const review = yield* reviews.dismiss(pull, params.reviewId, payload.message)
          return { review, prId: pull.row.id }
        }).pipe(after((r) => r.prId), Effect.map((r) => r.review)),
      requestReviewers: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* find(params)
          yield* reviews.request(pull, yield* actor, payload.reviewers, "manual")
          return { requestedReviewers: (yield* pulls.render(pull.row.id).pipe(Effect.orDie)).requestedReviewers }
        }),
      removeReviewers: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* find(params)
          return { requestedReviewers: yield* reviews.unrequest(pull, payload.reviewers) }
        }),
      comments: ({ params }) => Effect.flatMap(find(params), comments.list),
      createComment: ({ params, payload }) =>
        Effect.gen(function*() {
          const pull = yield* findWritable(params)
          const comment = yield* comments.create(pull, yield* actor, payload)
          return { comment, prId: pull.row.id }
        }).pipe(after((r) => r.prId), Effect.map((r) => r.comment)),
      applySuggestion: ({ params }) =>
        Effect.gen(function*() {
          const pull = yield* findWritable(params)
          return yield* suggestions.apply(pull, yield* actor, params.suggestionId)
        })
    })
  })
)
