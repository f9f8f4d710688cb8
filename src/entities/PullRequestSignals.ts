import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PushEvent } from "../../schemas/Repositories.ts"
import { Events } from "../../services/platform/Events.ts"
import { CommitStatusEvent } from "../../services/pulls/BranchRules.ts"
import { PullRequest } from "./PullRequest.ts"

/**
 * The durable `pull-requests` consumer of domain events: a push to a branch re-evaluates
 * every open pull request from or into it (a new head is recorded by the entity), and a
 * commit status re-evaluates the open pull requests whose head is that commit (auto-merge).
 * The entities are nudged after the consumer's transaction, from the layer's own context.
 */
export const PullRequestSignals = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const sql = yield* SqlClient.SqlClient
  const makeClient = yield* PullRequest.client
  const run = Effect.runForkWith(yield* Effect.context<never>())

  const nudge = (ids: ReadonlyArray<string>, sender: { id: string; name: string } | null) =>
    Effect.sync(() => {
      for (const id of ids) {
        run(
          makeClient(id).Refresh({ sender }).pipe(
            Effect.catchCause((cause) => Effect.logWarning("PullRequest: refresh could not be sent", cause))
          )
        )
      }
    })

  yield* events.consume("pull-requests", (event) =>
    Effect.gen(function*() {
      const push = PushEvent.match(event)
      if (Option.isSome(push)) {
        const { ref, repository, sender } = push.value
        if (!ref.startsWith("refs/heads/")) return
        const branch = ref.slice("refs/heads/".length)
        const rows = yield* sql<{ id: string; source: boolean }>`
          SELECT id, source_branch = ${branch} AS source FROM pull_requests
          WHERE repo_id = ${repository.id} AND state IN ('open', 'draft')
            AND (source_branch = ${branch} OR target_branch = ${branch})`
        const who = sender === null ? null : { id: sender.id, name: sender.name }
        yield* nudge(rows.filter((row) => row.source).map((row) => row.id), who)
        yield* nudge(rows.filter((row) => !row.source).map((row) => row.id), null)
        return
      }
      const status = CommitStatusEvent.match(event)
      if (Option.isSome(status)) {
        const rows = yield* sql<{ id: string }>`
          SELECT id FROM pull_requests
          WHERE repo_id = ${status.value.repoId} AND head_sha = ${status.value.sha} AND state IN ('open', 'draft')`
        yield* nudge(rows.map((row) => row.id), null)
      }
    }), { types: [PushEvent.type, CommitStatusEvent.type], from: "now" })
}))
