import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import {
  type CreateWebhook,
  PlanRequired,
  type UpdateWebhook,
  type Webhook,
  WEBHOOK_DEFAULTS,
  type WebhookContentType,
  type WebhookList,
  webhookValidationError
} from "../../schemas/webhooks/Webhooks.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Crypto } from "../platform/Crypto.ts"
import { makeId } from "../platform/Ids.ts"
import { reencrypt } from "../platform/Reencrypt.ts"
import { decodeRows } from "../platform/Rows.ts"
import { planAbove, webhooksPerScope } from "./Limits.ts"
import {
  CountedWebhookRow,
  type DeliveryCounts,
  OutcomeRow,
  OwnerEmailRow,
  ScopeCountRow,
  SecretRow,
  WebhookIdRow,
  WebhookRow
} from "./WebhookRows.ts"

/** Where a webhook belongs: the organization (`repoId` null) or one of its repositories. */
export interface WebhookScope {
  readonly orgId: string
  readonly repoId: string | null
}

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
      const inScope = (scope: WebhookScope) =>
        sql`org_id = ${scope.orgId} AND repo_id IS NOT DISTINCT FROM ${scope.repoId}`

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
      const encryptSecret = (orgId: string, secret: string | null | undefined) =>
        secret === undefined || secret === null ? Effect.succeed(null) : crypto.encrypt(orgId, secret)

      const create = Effect.fn("Webhooks.create")(function*(scope: WebhookScope, input: CreateWebhook) {
        yield* checkUrl(input.url)
        const secret = yield* encryptSecret(scope.orgId, input.secret)
        const now = yield* nowIso
        const row = yield* sql.withTransaction(Effect.gen(function*() {
          // Serialise creations in one scope so two at once cannot both pass the count.
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`webhooks:${scope.orgId}:${scope.repoId ?? ""}`}))`
          const [org] = yield* sql`
            SELECT plan, (SELECT count(*) FROM webhooks WHERE ${inScope(scope)}) AS count
            FROM organizations WHERE id = ${scope.orgId}`.pipe(decodeRows(ScopeCountRow))
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
          const rows = yield* sql`
            INSERT INTO webhooks (
              id, org_id, repo_id, url, secret_enc, content_type, events, is_active, max_retries,
              retry_interval_seconds, created_at, updated_at
            ) VALUES (
              ${makeId("webhook")}, ${scope.orgId}, ${scope.repoId}, ${input.url}, ${secret},
              ${input.contentType ?? WEBHOOK_DEFAULTS.contentType},
              ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(input.events)}::jsonb)),
              ${input.isActive ?? WEBHOOK_DEFAULTS.isActive}, ${input.maxRetries ?? WEBHOOK_DEFAULTS.maxRetries},
              ${input.retryIntervalSeconds ?? WEBHOOK_DEFAULTS.retryIntervalSeconds},
              ${now}::timestamptz, ${now}::timestamptz
            ) RETURNING *`.pipe(decodeRows(WebhookRow))
          return rows[0]
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return toWebhook(row)
      })

      const withCounts = (filter: Statement.Fragment) =>
        sql`
          SELECT w.*, d.delivery_count, d.failure_count, d.last_delivery_at FROM webhooks w
          LEFT JOIN LATERAL (
            SELECT count(*) AS delivery_count, count(*) FILTER (WHERE status = 'failed') AS failure_count,
              max(delivered_at) AS last_delivery_at
            FROM webhook_deliveries WHERE webhook_id = w.id
          ) d ON true
          WHERE ${filter}
          ORDER BY w.created_at DESC, w.id DESC`.pipe(decodeRows(CountedWebhookRow), Effect.orDie)

      const list = Effect.fn("Webhooks.list")(function*(scope: WebhookScope) {
        const rows = yield* withCounts(inScope(scope))
        return { webhooks: rows.map(toWebhook), count: rows.length }
      })

      const get = Effect.fn("Webhooks.get")(function*(scope: WebhookScope, id: string) {
        const rows = yield* withCounts(sql`w.id = ${id} AND ${inScope(scope)}`)
        if (rows.length === 0) return yield* notFound(id)
        return toWebhook(rows[0])
      })

      const update = Effect.fn("Webhooks.update")(function*(scope: WebhookScope, id: string, patch: UpdateWebhook) {
        if (patch.url !== undefined) yield* checkUrl(patch.url)
        const secret = patch.secret === undefined ? undefined : yield* encryptSecret(scope.orgId, patch.secret)
        const now = yield* nowIso
        const none = sql.literal("")
        const set = (column: string, value: unknown) => value === undefined ? none : sql`, ${sql(column)} = ${value}`
        const rows = yield* sql`
          UPDATE webhooks SET updated_at = ${now}::timestamptz
            ${set("url", patch.url)}${set("content_type", patch.contentType)}
            ${set("max_retries", patch.maxRetries)}${set("retry_interval_seconds", patch.retryIntervalSeconds)}
            ${secret === undefined ? none : sql`, secret_enc = ${secret}`}
            ${
          patch.events === undefined
            ? none
            : sql`, events = ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(patch.events)}::jsonb))`
        }
            ${
          patch.isActive === undefined
            ? none
            // Re-enabled by hand: the failure streak starts over.
            : sql`, is_active = ${patch.isActive}, failing_since = NULL, disabled_reason = NULL`
        }
          WHERE id = ${id} AND ${inScope(scope)}
          RETURNING id`.pipe(decodeRows(WebhookIdRow), Effect.orDie)
        if (rows.length === 0) return yield* notFound(id)
        return yield* get(scope, id)
      })

      const remove = Effect.fn("Webhooks.remove")(function*(scope: WebhookScope, id: string) {
        const rows = yield* sql`DELETE FROM webhooks WHERE id = ${id} AND ${inScope(scope)} RETURNING id`.pipe(
          decodeRows(WebhookIdRow),
          Effect.orDie
        )
        if (rows.length === 0) return yield* notFound(id)
      })

      const toTarget = (row: WebhookRow) =>
        Effect.map(
          row.secret_enc === null ? Effect.succeed(null) : Effect.orDie(crypto.decrypt(row.org_id, row.secret_enc)),
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
        const rows = yield* sql`SELECT * FROM webhooks WHERE id = ${id} AND ${inScope(scope)}`.pipe(
          decodeRows(WebhookRow),
          Effect.orDie
        )
        if (rows.length === 0) return yield* notFound(id)
        if (!rows[0].is_active) {
          return yield* new Conflict({ message: `Webhook '${id}' is inactive; activate it first (isActive: true)` })
        }
        return yield* toTarget(rows[0])
      })

      const loadTarget = Effect.fn("Webhooks.loadTarget")(function*(id: string) {
        const rows = yield* sql`SELECT * FROM webhooks WHERE id = ${id}`.pipe(decodeRows(WebhookRow), Effect.orDie)
        return rows.length === 0 ? Option.none() : Option.some(yield* toTarget(rows[0]))
      })

      const noteOutcome = Effect.fn("Webhooks.noteOutcome")(function*(
        id: string,
        outcome: { readonly ok: boolean; readonly at: Date; readonly disableAfterMs: number }
      ) {
        const at = outcome.at.toISOString()
        if (outcome.ok) {
          yield* sql`UPDATE webhooks SET failing_since = NULL WHERE id = ${id} AND failing_since IS NOT NULL`.pipe(
            Effect.orDie
          )
          return Option.none()
        }
        const cutoff = new Date(outcome.at.getTime() - outcome.disableAfterMs).toISOString()
        const disabled = yield* sql`
          UPDATE webhooks SET
            failing_since = coalesce(failing_since, ${at}::timestamptz),
            is_active = is_active AND NOT coalesce(failing_since <= ${cutoff}::timestamptz, false),
            disabled_reason = CASE WHEN failing_since <= ${cutoff}::timestamptz
              THEN 'Every delivery attempt failed for 5 days' ELSE disabled_reason END
          WHERE id = ${id}
          RETURNING org_id, NOT is_active AND failing_since <= ${cutoff}::timestamptz AS just_disabled`.pipe(
          decodeRows(OutcomeRow),
          Effect.orDie
        )
        if (disabled.length === 0 || !disabled[0].just_disabled) {
          return Option.none()
        }
        // The owners come from tenancy's tables: read-only, for this one notice.
        const owners = yield* sql`
          SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.org_id = ${disabled[0].org_id} AND m.role = 'owner' ORDER BY u.email`.pipe(
          decodeRows(OwnerEmailRow),
          Effect.orDie
        )
        return Option.some(owners.map((owner) => owner.email))
      })

      const moveRepository = (repoId: string, fromOrgId: string, toOrgId: string) =>
        Effect.gen(function*() {
          const client = yield* SqlClient.SqlClient
          const rows = yield* client`
            SELECT id, secret_enc FROM webhooks WHERE org_id = ${fromOrgId} AND repo_id = ${repoId} FOR UPDATE`.pipe(
            decodeRows(SecretRow)
          )
          for (const row of rows) {
            const secret = row.secret_enc === null
              ? null
              : yield* reencrypt(fromOrgId, toOrgId, row.secret_enc).pipe(Effect.provideService(Crypto, crypto))
            yield* client`
              UPDATE webhooks SET org_id = ${toOrgId}, secret_enc = ${secret}, updated_at = now() WHERE id = ${row.id}`
          }
        }).pipe(Effect.orDie)

      const removeForRepository = (repoId: string) =>
        Effect.flatMap(SqlClient.SqlClient, (client) => client`DELETE FROM webhooks WHERE repo_id = ${repoId}`).pipe(
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
