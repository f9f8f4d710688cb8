import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { Transfer, TransferList } from "../../schemas/git/Lifecycle.ts"
import { RepositoryChangedEvent } from "../../schemas/git/Repositories.ts"
import { Conflict, Forbidden, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { Role } from "../../schemas/tenancy/Tenancy.ts"
import { moveAiSettings } from "../ai/AiSettings.ts"
import { moveCiSecrets } from "../ci/CiSettings.ts"
import { publish } from "../events/Events.ts"
import { Crypto } from "../platform/Crypto.ts"
import { makeId } from "../platform/Ids.ts"
import { isUniqueViolation } from "../platform/Rows.ts"
import { PullRequests } from "../pulls/PullRequests.ts"
import { lifecycle } from "../tenancy/Plans.ts"
import { organizationNameBySlug, roleInOrganization } from "../tenancy/Tenancy.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { Repositories } from "./Repositories.ts"
import { dropRedirect, insertRedirect, moveRepositoryRow } from "./RepositoryRows.ts"
import { storageStanding } from "./StorageQuota.ts"
import {
  decideTransfer,
  expirePending,
  insertTransfer,
  lockTransfer,
  stateAt,
  toTransfer,
  transferById,
  type TransferRow,
  transfersOf
} from "./TransferRows.ts"

const DAY_MS = 24 * 60 * 60 * 1000

/** Who asks: the key's user, organization and role there. */
export interface TransferActor {
  readonly userId: string
  readonly orgId: string
  readonly role: Role
}

const isAdmin = (role: Role | null) => role === "owner" || role === "admin"

/**
 * Repository transfers between organizations (GUIDE §16). Requested by a user who is owner
 * or admin in both organizations; accepted or declined by an owner or admin of the target
 * within 7 days, else `expired`. Acceptance moves the repository, its pull requests and its
 * webhooks in one transaction (issues, rules and settings are keyed by the repository and
 * follow it), re-encrypts the webhook secrets under the target's key, and leaves a redirect
 * of the old path until the name is used again. Refused (409) when the target has the name
 * (at the request and again at acceptance) or lacks the storage.
 */
export class Transfers extends Context.Service<Transfers, {
  request(
    actor: TransferActor,
    repoSlug: string,
    targetOrg: string
  ): Effect.Effect<Transfer, NotFound | Forbidden | Conflict | ValidationError>
  list(orgId: string): Effect.Effect<TransferList>
  accept(actor: TransferActor, id: string): Effect.Effect<Transfer, NotFound | Forbidden | Conflict>
  decline(actor: TransferActor, id: string): Effect.Effect<Transfer, NotFound | Forbidden | Conflict>
}>()("canopy/git/Transfers") {
  static readonly layer = Layer.effect(
    Transfers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repos = yield* Repositories
      const pulls = yield* PullRequests
      const webhooks = yield* Webhooks
      const crypto = yield* Crypto
      /** CI variables and AI settings follow the repository, re-encrypted under the target's key. */
      const withSecrets = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Crypto>) =>
        effect.pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.provideService(Crypto, crypto),
          Effect.orDie
        )
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)
      const notFound = (id: string) => new NotFound({ message: `Transfer '${id}' not found` })

      const load = (id: string) =>
        transferById(sql, id).pipe(
          Effect.orDie,
          Effect.map((rows) => Option.fromNullishOr(rows[0]))
        )

      const nameTaken = (orgSlug: string, repoSlug: string, repoName: string) =>
        Effect.flatMap(repos.find(orgSlug, repoSlug), (found) =>
          Option.isSome(found)
            ? Effect.fail(
              new Conflict({ message: `The organization '${orgSlug}' has a repository named '${repoName}'` })
            )
            : Effect.void)

      const request = Effect.fn("Transfers.request")(
        function*(actor: TransferActor, repoSlug: string, targetOrg: string) {
          if (!isAdmin(actor.role)) {
            return yield* new Forbidden({ message: "Transferring a repository needs an owner or admin" })
          }
          const repo = yield* repos.record(actor.orgId, repoSlug)
          const target = yield* organizationNameBySlug(sql, targetOrg).pipe(Effect.orDie)
          const targetRole = Option.isNone(target)
            ? null
            : yield* roleInOrganization(sql, target.value.id, actor.userId).pipe(Effect.orDie)
          // Not a member of the target, or no such organization: 404 alike (existence does not leak).
          if (Option.isNone(target) || targetRole === null) {
            return yield* new NotFound({ message: `Organization '${targetOrg}' not found` })
          }
          if (!isAdmin(targetRole)) {
            return yield* new Forbidden({ message: `Transferring needs an owner or admin of '${targetOrg}' too` })
          }
          if (target.value.id === actor.orgId) {
            return yield* new ValidationError({
              message: "The repository is already in that organization",
              details: [{ path: "body.targetOrg", message: "must be another organization" }]
            })
          }
          yield* nameTaken(target.value.slug, repo.slug, repo.name)
          const now = yield* Clock.currentTimeMillis
          const id = makeId("xfer")
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* expirePending(sql, repo.id, new Date(now))
            yield* insertTransfer(sql, {
              id,
              repoId: repo.id,
              fromOrgId: actor.orgId,
              toOrgId: target.value.id,
              requestedBy: actor.userId,
              expiresAt: new Date(now + lifecycle.transferAcceptanceDays * DAY_MS),
              now: new Date(now)
            })
          })).pipe(
            Effect.catchTag("SqlError", (error) =>
              isUniqueViolation(error)
                ? Effect.fail(new Conflict({ message: `Repository '${repo.name}' already has a pending transfer` }))
                : Effect.die(error))
          )
          return toTransfer(Option.getOrThrow(yield* load(id)), now)
        }
      )

      const list = Effect.fn("Transfers.list")(function*(orgId: string) {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* transfersOf(sql, orgId).pipe(Effect.orDie)
        return { transfers: rows.map((row) => toTransfer(row, now)), count: rows.length }
      })

      /** The transfer as its target's owner or admin may decide it; the other side sees 403, anyone else 404. */
      const decidable = (actor: TransferActor, id: string) =>
        Effect.gen(function*() {
          const found = yield* load(id)
          if (Option.isNone(found)) return yield* notFound(id)
          const row = found.value
          if (row.to_org_id !== actor.orgId) {
            return yield* row.from_org_id === actor.orgId
              ? Effect.fail(new Forbidden({ message: "Only the target organization accepts or declines a transfer" }))
              : Effect.fail(notFound(id))
          }
          if (!isAdmin(actor.role)) {
            return yield* new Forbidden({ message: "Accepting or declining a transfer needs an owner or admin" })
          }
          return row
        })

      /** Under the row lock: still pending at `now`, or a 409 saying what it is (an expired one is marked). */
      const stillPending = (row: TransferRow, now: number) =>
        Effect.gen(function*() {
          yield* lockTransfer(sql, row.id)
          const [fresh] = yield* transferById(sql, row.id)
          const state = stateAt(fresh, now)
          if (state === "expired" && fresh.state === "pending") {
            yield* decideTransfer(sql, row.id, { state: "expired", by: null, now: new Date(now) })
          }
          return state === "pending" ? Option.some(fresh) : Option.none()
        })

      const accept = Effect.fn("Transfers.accept")(function*(actor: TransferActor, id: string) {
        const row = yield* decidable(actor, id)
        const now = yield* Clock.currentTimeMillis
        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          const pending = yield* stillPending(row, now)
          if (Option.isNone(pending)) return "not pending" as const
          const fresh = pending.value
          // The requester may have lost a role since: both sides must still hold it.
          const fromRole = yield* roleInOrganization(sql, fresh.from_org_id, fresh.requested_by)
          const toRole = yield* roleInOrganization(sql, fresh.to_org_id, fresh.requested_by)
          if (!isAdmin(fromRole) || !isAdmin(toRole)) return "requester lost a role" as const
          if (Option.isSome(yield* repos.find(fresh.to_org_slug, fresh.repo_slug))) return "name taken" as const
          const standing = yield* withSql(storageStanding(fresh.to_org_id))
          if (standing.usedBytes + fresh.repo_bytes > standing.limitBytes) return "no storage" as const
          yield* moveRepositoryRow(sql, fresh.repo_id, fresh.to_org_id)
          yield* withSql(pulls.moveRepository(fresh.repo_id, fresh.to_org_id))
          yield* withSql(webhooks.moveRepository(fresh.repo_id, fresh.from_org_id, fresh.to_org_id))
          yield* withSecrets(moveCiSecrets(fresh.repo_id, fresh.from_org_id, fresh.to_org_id))
          yield* withSecrets(moveAiSettings(fresh.repo_id, fresh.from_org_id, fresh.to_org_id))
          yield* insertRedirect(sql, fresh.from_org_slug, fresh.repo_slug, fresh.repo_id)
          yield* dropRedirect(sql, fresh.to_org_slug, fresh.repo_slug)
          yield* decideTransfer(sql, id, { state: "accepted", by: actor.userId, now: new Date(now) })
          yield* withSql(
            publish(RepositoryChangedEvent.make(fresh.from_org_id, { repoId: fresh.repo_id, change: "deleted" }))
          )
          yield* withSql(
            publish(RepositoryChangedEvent.make(fresh.to_org_id, { repoId: fresh.repo_id, change: "created" }))
          )
          return "accepted" as const
        })).pipe(
          Effect.catchTag(
            "SqlError",
            (error) => isUniqueViolation(error) ? Effect.succeed("name taken" as const) : Effect.die(error)
          )
        )
        const current = Option.getOrThrow(yield* load(id))
        switch (outcome) {
          case "accepted":
            return toTransfer(current, now)
          case "not pending":
            return yield* new Conflict({ message: `Transfer '${id}' is ${stateAt(current, now)}` })
          case "requester lost a role":
            return yield* new Conflict({
              message: "The requester is no longer an owner or admin of both organizations"
            })
          case "name taken":
            return yield* new Conflict({
              message: `The organization '${current.to_org_slug}' has a repository named '${current.repo_name}'`
            })
          case "no storage":
            return yield* new Conflict({
              message: `The organization '${current.to_org_slug}' lacks the storage for '${current.repo_name}'`
            })
        }
      })

      const decline = Effect.fn("Transfers.decline")(function*(actor: TransferActor, id: string) {
        const row = yield* decidable(actor, id)
        const now = yield* Clock.currentTimeMillis
        const declined = yield* sql.withTransaction(Effect.gen(function*() {
          const pending = yield* stillPending(row, now)
          if (Option.isNone(pending)) return false
          yield* decideTransfer(sql, id, { state: "declined", by: actor.userId, now: new Date(now) })
          return true
        })).pipe(Effect.orDie)
        const current = Option.getOrThrow(yield* load(id))
        if (!declined) return yield* new Conflict({ message: `Transfer '${id}' is ${stateAt(current, now)}` })
        return toTransfer(current, now)
      })

      return Transfers.of({ request, list, accept, decline })
    })
  )
}
