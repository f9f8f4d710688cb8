import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import {
  type CreateWebhook,
  PlanRequired,
  type UpdateWebhook,
  type Webhook,
  type WebhookContentType,
  type WebhookList,
  webhookValidationError
} from "../../schemas/webhooks/Webhooks.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Crypto } from "../platform/Crypto.ts"
import { makeId } from "../platform/Ids.ts"
import { reencrypt } from "../platform/Reencrypt.ts"
import { organizationPlanExpression, ownerEmails } from "../tenancy/Tenancy.ts"
import { planAbove, webhooksPerScope } from "./Limits.ts"
import {
  countInScope,
  deleteRepositoryWebhooks,
  deleteWebhook,
  type DeliveryCounts,
  endFailureStreak,
  findWebhook,
  insertWebhook,
  legacySecrets,
  lockScope,
  moveWebhook,
  noteFailure,
  replaceSecret,
  repositorySecrets,
  updateWebhookRow,
  type WebhookRow,
  type WebhookScope,
  webhooksWithCounts
} from "./WebhookRows.ts"

export type { WebhookScope } from "./WebhookRows.ts"

/** What the delivery loop needs: the settings with the secret decrypted. */
export interface WebhookTarget {
  readonly id: string
  readonly orgId: string
  readonly repoId: string | null
  readonly url: string
  readonly secret: string | null
  readonly contentType: WebhookContentType
  readonly isActive: boolean
  readonly maxRetries: number
  readonly retryIntervalSeconds: number
  readonly failingSince: Date | null
}

const toWebhook = (row: WebhookRow & Partial<DeliveryCounts>): Webhook => ({
  id: row.id,
  url: row.url,
  hasSecret: row.secret_enc !== null,
  contentType: row.content_type,
  events: row.events,
  isActive: row.is_active,
  maxRetries: row.max_retries,
  retryIntervalSeconds: row.retry_interval_seconds,
  deliveryCount: row.delivery_count ?? 0,
  failureCount: row.failure_count ?? 0,
  lastDeliveryAt: row.last_delivery_at?.toISOString() ?? null,
  disabledReason: row.disabled_reason,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

/**
 * Webhooks of an organization or a repository (spec 001 "Webhooks", GUIDE §13): CRUD with
 * per-plan counts and the write-only, encrypted secret. Every method is scoped; another
 * organization's (or repository's) webhook is a `NotFound`.
 */
export class Webhooks extends Context.Service<Webhooks, {
  create(scope: WebhookScope, input: CreateWebhook): Effect.Effect<Webhook, ValidationError | PlanRequired>
  /** With `deliveryCount`, `failureCount`, `lastDeliveryAt` from the log; newest first. */
  list(scope: WebhookScope): Effect.Effect<WebhookList>
  get(scope: WebhookScope, id: string): Effect.Effect<Webhook, NotFound>
  update(scope: WebhookScope, id: string, patch: UpdateWebhook): Effect.Effect<Webhook, NotFound | ValidationError>
  remove(scope: WebhookScope, id: string): Effect.Effect<void, NotFound>
  /** The webhook if it is in `scope` and active (redeliver, test), else NotFound / Conflict. */
  requireActive(scope: WebhookScope, id: string): Effect.Effect<WebhookTarget, NotFound | Conflict>
  /** Internal (delivery loop): the settings and decrypted secret, no scope check. */
  loadTarget(id: string): Effect.Effect<Option.Option<WebhookTarget>>
  /**
   * Internal (delivery loop): notes an attempt's outcome. Success ends a failure streak; a
   * failure starts one, and one older than `disableAfterMs` disables the webhook: then the
   * owners' e-mail addresses are returned, to be told.
   */
  noteOutcome(
    id: string,
    outcome: { readonly ok: boolean; readonly at: Date; readonly disableAfterMs: number }
  ): Effect.Effect<Option.Option<ReadonlyArray<string>>>
  /**
   * Internal (repository transfer, in the caller's transaction): the repository's webhooks
   * move to `toOrgId`, their secrets re-encrypted under its key.
   */
  moveRepository(repoId: string, fromOrgId: string, toOrgId: string): Effect.Effect<void, never, SqlClient.SqlClient>
  /** Internal (repository purge, in the caller's transaction): the repository's webhooks go. */
  removeForRepository(repoId: string): Effect.Effect<void, never, SqlClient.SqlClient>
}>()("canopy/webhooks/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const crypto = yield* Crypto
      const { outboundAllowPrivate } = yield* AppConfig
      const notFound = (id: string) => new NotFound({ message: `Webhook '${id}' not found` })
      const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      /** https only, or http too when private targets are allowed (local receivers). */
      const checkUrl = (url: string): Effect.Effect<void, ValidationError> => {
        let parsed: URL
        try {
          parsed = new URL(url)
        } catch {
          return Effect.fail(webhookValidationError("url", "must be an absolute URL"))
        }
        if (parsed.protocol === "https:" && parsed.hostname !== "") return Effect.void
        if (parsed.protocol === "http:" && parsed.hostname !== "" && outboundAllowPrivate) return Effect.void
        return Effect.fail(webhookValidationError(
          "url",
          outboundAllowPrivate ? "must be an http:// or https:// URL" : "must be an https:// URL"
        ))
      }
      /** Each secret is bound to its webhook: a ciphertext moved to another row does not decrypt. */
      const secretPurpose = (webhookId: string) => `webhook-secret:${webhookId}`
      const encryptSecret = (orgId: string, webhookId: string, secret: string | null | undefined) =>
        secret === undefined || secret === null
          ? Effect.succeed(null)
          : crypto.encrypt(orgId, secretPurpose(webhookId), secret)

      // Secrets stored before purpose binding (`v1`) are rewritten once, at start-up; the
      // compare-and-set lets runners starting together race harmlessly.
      const legacy = yield* legacySecrets(sql).pipe(Effect.orDie)
      yield* Effect.forEach(legacy, (row) =>
        Effect.gen(function*() {
          const purpose = secretPurpose(row.id)
          const plaintext = yield* crypto.decrypt(row.org_id, purpose, row.secret_enc)
          const upgraded = yield* crypto.encrypt(row.org_id, purpose, plaintext)
          yield* replaceSecret(sql, row.id, row.secret_enc, upgraded)
        }).pipe(
          Effect.catchTag("DecryptError", (error) =>
            Effect.logWarning(`Webhook ${row.id}: its stored secret does not decrypt (${error.message})`)),
          Effect.orDie
        ), { discard: true })

      const create = Effect.fn("Webhooks.create")(function*(scope: WebhookScope, input: CreateWebhook) {
        yield* checkUrl(input.url)
        const id = makeId("webhook")
        const secret = yield* encryptSecret(scope.orgId, id, input.secret)
        const now = yield* nowIso
        const row = yield* sql.withTransaction(Effect.gen(function*() {
          // Serialise creations in one scope so two at once cannot both pass the count.
          yield* lockScope(sql, scope)
          const [org] = yield* countInScope(sql, scope, organizationPlanExpression(sql, scope.orgId))
          const limit = webhooksPerScope[org.plan]
          if (org.count >= limit) {
            const requiredPlan = planAbove(org.plan)
            return yield* new PlanRequired({
              message: `The ${org.plan} plan allows ${limit} webhooks ${
                scope.repoId === null ? "per organization" : "per repository"
              }; upgrade to ${requiredPlan} for more`,
              requiredPlan
            })
          }
          const rows = yield* insertWebhook(sql, scope, input, secret, now, id)
          return rows[0]
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return toWebhook(row)
      })

      const list = Effect.fn("Webhooks.list")(function*(scope: WebhookScope) {
        const rows = yield* webhooksWithCounts(sql, scope).pipe(Effect.orDie)
        return { webhooks: rows.map(toWebhook), count: rows.length }
      })

      const get = Effect.fn("Webhooks.get")(function*(scope: WebhookScope, id: string) {
        const rows = yield* webhooksWithCounts(sql, scope, id).pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound(id)
        return toWebhook(rows[0])
      })

      const update = Effect.fn("Webhooks.update")(function*(scope: WebhookScope, id: string, patch: UpdateWebhook) {
        if (patch.url !== undefined) yield* checkUrl(patch.url)
        const secret = patch.secret === undefined ? undefined : yield* encryptSecret(scope.orgId, id, patch.secret)
        const now = yield* nowIso
        const rows = yield* updateWebhookRow(sql, scope, id, patch, secret, now).pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound(id)
        return yield* get(scope, id)
      })

      const remove = Effect.fn("Webhooks.remove")(function*(scope: WebhookScope, id: string) {
        const rows = yield* deleteWebhook(sql, scope, id).pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound(id)
      })

      const toTarget = (row: WebhookRow) =>
        Effect.map(
          row.secret_enc === null
            ? Effect.succeed(null)
            : Effect.orDie(crypto.decrypt(row.org_id, secretPurpose(row.id), row.secret_enc)),
          (secret): WebhookTarget => ({
            id: row.id,
            orgId: row.org_id,
            repoId: row.repo_id,
            url: row.url,
            secret,
            contentType: row.content_type,
            isActive: row.is_active,
            maxRetries: row.max_retries,
            retryIntervalSeconds: row.retry_interval_seconds,
            failingSince: row.failing_since
          })
        )

      const requireActive = Effect.fn("Webhooks.requireActive")(function*(scope: WebhookScope, id: string) {
        const rows = yield* findWebhook(sql, id, scope).pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound(id)
        if (!rows[0].is_active) {
          return yield* new Conflict({ message: `Webhook '${id}' is inactive; activate it first (isActive: true)` })
        }
        return yield* toTarget(rows[0])
      })

      const loadTarget = Effect.fn("Webhooks.loadTarget")(function*(id: string) {
        const rows = yield* findWebhook(sql, id).pipe(Effect.orDie)
        return rows.length === 0 ? Option.none() : Option.some(yield* toTarget(rows[0]))
      })

      const noteOutcome = Effect.fn("Webhooks.noteOutcome")(function*(
        id: string,
        outcome: { readonly ok: boolean; readonly at: Date; readonly disableAfterMs: number }
      ) {
        if (outcome.ok) {
          yield* endFailureStreak(sql, id).pipe(Effect.orDie)
          return Option.none()
        }
        const cutoff = new Date(outcome.at.getTime() - outcome.disableAfterMs)
        const disabled = yield* noteFailure(sql, id, outcome.at, cutoff).pipe(Effect.orDie)
        if (disabled.length === 0 || !disabled[0].just_disabled) {
          return Option.none()
        }
        return Option.some(yield* ownerEmails(sql, disabled[0].org_id).pipe(Effect.orDie))
      })

      const moveRepository = (repoId: string, fromOrgId: string, toOrgId: string) =>
        Effect.gen(function*() {
          const client = yield* SqlClient.SqlClient
          for (const row of yield* repositorySecrets(client, fromOrgId, repoId)) {
            const secret = row.secret_enc === null
              ? null
              : yield* reencrypt(fromOrgId, toOrgId, secretPurpose(row.id), row.secret_enc).pipe(
                Effect.provideService(Crypto, crypto)
              )
            yield* moveWebhook(client, row.id, toOrgId, secret)
          }
        }).pipe(Effect.orDie)

      const removeForRepository = (repoId: string) =>
        Effect.flatMap(SqlClient.SqlClient, (client) => deleteRepositoryWebhooks(client, repoId)).pipe(
          Effect.asVoid,
          Effect.orDie
        )

      return Webhooks.of({
        moveRepository,
        removeForRepository,
        create,
        list,
        get,
        update,
        remove,
        requireActive,
        loadTarget,
        noteOutcome
      })
    })
  )
}
