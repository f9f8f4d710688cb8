import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { MergeBlocked, MergeResult, MergeStrategy } from "../../schemas/pulls/PullRequests.ts"
import { Role } from "../../schemas/tenancy/Tenancy.ts"

/**
 * The pull request entity's protocol: one entity per pull request (GUIDE §11), owning
 * merge-check evaluation, merges (manual and automatic, never overlapping) and the stale
 * timers. Handlers are in `PullRequestEntity.ts`, the timers in `PullRequestAlarms.ts`.
 */

const Sender = Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String }))

/** A branch moved, a review or status arrived, or the request was edited: re-evaluate. */
export const Refresh = Rpc.make("Refresh", { payload: { sender: Sender } })

export const MergeActorPayload = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  name: Schema.String,
  email: Schema.String,
  role: Role
})

/** `POST …/merge`: merge now, or answer why not. */
export const Merge = Rpc.make("Merge", {
  payload: {
    actor: MergeActorPayload,
    strategy: MergeStrategy,
    commitMessage: Schema.NullOr(Schema.String),
    deleteBranch: Schema.Boolean
  },
  success: MergeResult,
  error: Schema.Union([MergeBlocked, Conflict, NotFound])
})

/** The stale timer is due: warn or close; answers when the next step is due (ms), or null. */
export const Tick = Rpc.make("Tick", { success: Schema.NullOr(Schema.Number) })

export const PullRequest = Entity.make("PullRequest", [Refresh, Merge, Tick])
