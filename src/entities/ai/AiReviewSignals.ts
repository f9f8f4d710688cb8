import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { CommitStatusEvent } from "../../../schemas/protection/CommitStatuses.ts"
import {
  PullRequestOpened,
  PullRequestReviewSubmitted,
  PullRequestUpdated
} from "../../../schemas/pulls/PullRequestEvents.ts"
import { AiReviews } from "../../../services/ai/AiReviews.ts"
import { Autonomy } from "../../../services/ai/Autonomy.ts"
import { BOT_USERNAME } from "../../../services/ai/BotUser.ts"
import { ReviewRunner } from "../../../services/ai/ReviewRunner.ts"
import { Events } from "../../../services/events/Events.ts"
import { suggestionApplier } from "../../../services/pulls/Comments.ts"
import { openAtHead } from "../../../services/pulls/PullRequests.ts"
import { PullRequests } from "../../../services/pulls/PullRequests.ts"
import { Tenancy } from "../../../services/tenancy/Tenancy.ts"

/**
 * The durable `ai-review` consumer of domain events (GUIDE §15): a pull request opened, or
 * updated with new commits, queues an automatic review in the consumer's transaction (so a
 * restart loses none) and wakes the runner; an approval or a commit status lets the AI's
 * `merge` autonomy try again. Work beyond queuing runs after the transaction, forked.
 */
export const AiReviewSignals = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const sql = yield* SqlClient.SqlClient
  const reviews = yield* AiReviews
  const runner = yield* ReviewRunner
  const autonomy = yield* Autonomy
  const pulls = yield* PullRequests
  const tenancy = yield* Tenancy
  const run = Effect.runForkWith(yield* Effect.context<never>())
  const later = (effect: Effect.Effect<void>) => Effect.sync(() => run(effect))

  const queue = (prId: string, headSha: string, sender: { readonly id: string } | null) =>
    Effect.gen(function*() {
      const pull = yield* pulls.findById(prId)
      if (Option.isNone(pull)) return
      // Pushed by the AI itself (a suggestion its bot applied): not reviewed again. The update's
      // sender alone does not tell: another refresh of the entity may have seen the new head first.
      const bot = yield* tenancy.findMember(pull.value.repo.orgId, BOT_USERNAME)
      if (Option.isSome(bot)) {
        if (sender !== null && bot.value.id === sender.id) return
        const applier = yield* suggestionApplier(sql, prId, headSha).pipe(Effect.orDie)
        if (Option.isSome(applier) && applier.value === bot.value.id) return
      }
      const id = yield* reviews.enqueueAuto(pull.value, headSha)
      if (Option.isSome(id)) yield* later(runner.kick(prId, id.value))
    })

  yield* events.consume("ai-review", (event) =>
    Effect.gen(function*() {
      const opened = PullRequestOpened.match(event)
      if (Option.isSome(opened)) {
        const { pullRequest, sender } = opened.value
        return yield* queue(pullRequest.id, pullRequest.headSha, sender)
      }
      const updated = PullRequestUpdated.match(event)
      if (Option.isSome(updated)) {
        const { after, changes, pullRequest, sender } = updated.value
        // New commits, or a draft made ready: review the head.
        if (after !== null || changes.includes("isDraft")) {
          return yield* queue(pullRequest.id, after ?? pullRequest.headSha, sender)
        }
        return
      }
      const submitted = PullRequestReviewSubmitted.match(event)
      if (Option.isSome(submitted)) return yield* later(autonomy.reconsider(submitted.value.pullRequest.id))
      const status = CommitStatusEvent.match(event)
      if (Option.isSome(status)) {
        const rows = yield* openAtHead(sql, status.value.repoId, status.value.sha).pipe(Effect.orDie)
        for (const row of rows) yield* later(autonomy.reconsider(row.id))
      }
    }), {
    types: [PullRequestOpened.type, PullRequestUpdated.type, PullRequestReviewSubmitted.type, CommitStatusEvent.type],
    from: "now"
  })
}))
