import { Effect, Layer, Option } from "effect"
import { PushEvent } from "../../../schemas/git/Repositories.ts"
import { PullRequestOpened, PullRequestUpdated } from "../../../schemas/pulls/PullRequestEvents.ts"
import { CiRuns, type RunTrigger } from "../../../services/ci/CiRuns.ts"
import { CiSettings } from "../../../services/ci/CiSettings.ts"
import { Events } from "../../../services/events/Events.ts"
import { Repositories } from "../../../services/git/Repositories.ts"
import { Tenancy } from "../../../services/tenancy/Tenancy.ts"

const ZERO = /^0+$/

/**
 * The durable `ci` consumer of domain events (GUIDE §14): a push to a branch queues a run
 * when CI is enabled with `triggerOnPush`; a pull request opened, or updated with new
 * commits, queues a run of its head with `SERVICE_PR_NUMBER` when `triggerOnPR`. The run is
 * queued in the consumer's transaction, so an event is never lost nor queued twice.
 */
export const CiTriggers = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const runs = yield* CiRuns
  const settings = yield* CiSettings
  const repos = yield* Repositories
  const tenancy = yield* Tenancy

  const queue = (repoId: string, onPush: boolean, trigger: RunTrigger) =>
    Effect.gen(function*() {
      const repo = Option.getOrUndefined(yield* repos.findById(repoId))
      if (repo === undefined || repo.archived) return
      const config = yield* settings.config(repo)
      if (!config.enabled || !(onPush ? config.triggerOnPush : config.triggerOnPR)) return
      const org = yield* tenancy.findOrganization(repo.orgSlug).pipe(Effect.option)
      if (Option.isNone(org)) return
      yield* runs.enqueue(repo, org.value.plan, trigger)
    })

  yield* events.consume("ci", (event) =>
    Effect.gen(function*() {
      const push = PushEvent.match(event)
      if (Option.isSome(push)) {
        const { after, ref, repository, sender } = push.value
        if (!ref.startsWith("refs/heads/") || ZERO.test(after)) return
        return yield* queue(repository.id, true, {
          event: "push",
          branch: ref.slice("refs/heads/".length),
          commitSha: after,
          prNumber: null,
          rerunOf: null,
          sender: sender === null ? null : { id: sender.id, name: sender.name }
        })
      }
      const pull = Option.orElse(
        PullRequestOpened.match(event),
        () => Option.filter(PullRequestUpdated.match(event), (data) => data.after !== null)
      )
      if (Option.isSome(pull)) {
        const { pullRequest, repository, sender } = pull.value
        return yield* queue(repository.id, false, {
          event: "pull_request",
          branch: pullRequest.sourceBranch,
          commitSha: pullRequest.headSha,
          prNumber: pullRequest.number,
          rerunOf: null,
          sender
        })
      }
    }), { types: [PushEvent.type, PullRequestOpened.type, PullRequestUpdated.type], from: "now" })
}))
