import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PushEvent } from "../../../schemas/git/Repositories.ts"
import { CommitStatusEvent } from "../../../schemas/protection/CommitStatuses.ts"
import { Events } from "../../../services/events/Events.ts"
import { PullRequest } from "../../../services/pulls/PullRequestProtocol.ts"
import { openAtHead, openFromBranch, resetMergeabilityInto } from "../../../services/pulls/PullRequestRows.ts"

/**
 * The durable `pull-requests` consumer of domain events: a push to a branch re-evaluates
 * the open pull requests from it (the entity records the new head) and marks those into it
 * for recomputation (at once when auto-merge waits, else when next read), and a
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
        const sources = yield* openFromBranch(sql, repository.id, branch)
        yield* nudge(sources.map((row) => row.id), sender === null ? null : { id: sender.id, name: sender.name })
        // Into the branch: mergeability is unknown again. Computed at once where auto-merge
        // waits, otherwise when next asked for (GitHub's way: a busy target would otherwise
        // cost a merge per open pull request on every push).
        const targets = yield* resetMergeabilityInto(sql, repository.id, branch)
        yield* nudge(targets.filter((row) => row.auto).map((row) => row.id), null)
        return
      }
      const status = CommitStatusEvent.match(event)
      if (Option.isSome(status)) {
        const rows = yield* openAtHead(sql, status.value.repoId, status.value.sha)
        yield* nudge(rows.map((row) => row.id), null)
      }
    }), { types: [PushEvent.type, CommitStatusEvent.type], from: "now" })
}))
