import { Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AI_DEFAULTS, type AiSettings as AiSettingsBody, type UpdateAiSettings } from "../../schemas/ai/AiSettings.ts"
import { type NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { type RepoRecord, Repositories } from "../git/Repositories.ts"
import { OutboundGuard } from "../outbound/OutboundGuard.ts"
import { Crypto } from "../platform/Crypto.ts"
import { AiReviewGate } from "../pulls/AiReviewGate.ts"
import { type AiSettingsRow, findSettings, moveSettingsRow, upsertSettings } from "./AiSettingsRows.ts"
import { moveApiKey, openApiKey, sealApiKey } from "./ApiKeySeal.ts"

/** What a review needs to call the model: the settings and the opened key (never logged: Redacted). */
export interface ReviewConfig {
  readonly settings: AiSettingsRow
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
}

const defaults = (repo: RepoRecord): AiSettingsRow => ({
  repo_id: repo.id,
  org_id: repo.orgId,
  enabled: AI_DEFAULTS.enabled,
  model_provider: AI_DEFAULTS.modelProvider,
  model_name: AI_DEFAULTS.modelName,
  base_url: null,
  api_key_enc: null,
  auto_review_prs: AI_DEFAULTS.autoReviewPRs,
  review_drafts: AI_DEFAULTS.reviewDrafts,
  autonomy_level: AI_DEFAULTS.autonomyLevel,
  require_human_approval: AI_DEFAULTS.requireHumanApproval,
  focus_areas: AI_DEFAULTS.focusAreas
})

export const toSettings = (row: AiSettingsRow): AiSettingsBody => ({
  enabled: row.enabled,
  modelProvider: row.model_provider,
  modelName: row.model_name,
  baseUrl: row.base_url,
  hasApiKey: row.api_key_enc !== null,
  autoReviewPRs: row.auto_review_prs,
  reviewDrafts: row.review_drafts,
  autonomyLevel: row.autonomy_level,
  requireHumanApproval: row.require_human_approval,
  focusAreas: row.focus_areas
})

const invalid = (path: string, message: string) =>
  new ValidationError({ message: `Invalid ${path}: ${message}`, details: [{ path, message }] })

/**
 * AI review settings per repository (GUIDE §15). The key is sealed with `Crypto` (see
 * `ApiKeySeal.ts`) and only ever opened by `reviewConfig`, into a `Redacted`.
 */
export class AiSettings extends Context.Service<AiSettings, {
  get(orgId: string, repoSlug: string): Effect.Effect<AiSettingsBody, NotFound>
  update(
    orgId: string,
    repoSlug: string,
    patch: UpdateAiSettings
  ): Effect.Effect<AiSettingsBody, NotFound | ValidationError>
  /** The stored settings (defaults when none). */
  settings(repo: RepoRecord): Effect.Effect<AiSettingsRow>
  /** The settings with the key opened, for a review of `repo`. */
  reviewConfig(repo: RepoRecord): Effect.Effect<ReviewConfig>
}>()("canopy/ai/AiSettings") {
  static readonly layer = Layer.effect(
    AiSettings,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repos = yield* Repositories
      const crypto = yield* Crypto
      const guard = yield* OutboundGuard

      const settings = (repo: RepoRecord) =>
        findSettings(sql, repo.id).pipe(Effect.orDie, Effect.map(Option.getOrElse(() => defaults(repo))))

      const get = Effect.fn("AiSettings.get")(function*(orgId: string, repoSlug: string) {
        return toSettings(yield* settings(yield* repos.record(orgId, repoSlug)))
      })

      const checkBaseUrl = (raw: string) => {
        let url: URL
        try {
          url = new URL(raw)
        } catch {
          return Effect.fail(invalid("body.baseUrl", "must be an absolute URL"))
        }
        if (url.protocol !== "https:" && !(url.protocol === "http:" && guard.allowPrivate)) {
          return Effect.fail(invalid("body.baseUrl", guard.allowPrivate ? "must be http or https" : "must be https"))
        }
        if (url.username !== "" || url.password !== "") {
          return Effect.fail(invalid("body.baseUrl", "must not carry credentials; use apiKey"))
        }
        return Effect.succeed(raw.replace(/\/+$/, ""))
      }

      const update = Effect.fn("AiSettings.update")(
        function*(orgId: string, repoSlug: string, patch: UpdateAiSettings) {
          const repo = yield* repos.record(orgId, repoSlug)
          const current = yield* settings(repo)
          const baseUrl = patch.baseUrl === undefined
            ? current.base_url
            : patch.baseUrl === null
            ? null
            : yield* checkBaseUrl(patch.baseUrl)
          const apiKeyEnc = patch.apiKey === undefined
            ? current.api_key_enc
            : patch.apiKey === null
            ? null
            : yield* sealApiKey(crypto, repo.orgId, repo.id, patch.apiKey)
          const next: AiSettingsRow = {
            ...current,
            enabled: patch.enabled ?? current.enabled,
            model_provider: patch.modelProvider ?? current.model_provider,
            model_name: patch.modelName ?? current.model_name,
            base_url: baseUrl,
            api_key_enc: apiKeyEnc,
            auto_review_prs: patch.autoReviewPRs ?? current.auto_review_prs,
            review_drafts: patch.reviewDrafts ?? current.review_drafts,
            autonomy_level: patch.autonomyLevel ?? current.autonomy_level,
            require_human_approval: patch.requireHumanApproval ?? current.require_human_approval,
            focus_areas: patch.focusAreas === undefined ? current.focus_areas : [...new Set(patch.focusAreas)]
          }
          // A local server (Ollama) takes no key; the providers' own endpoints do.
          if (next.enabled && next.api_key_enc === null && next.base_url === null) {
            return yield* invalid(
              patch.apiKey === null ? "body.apiKey" : "body.enabled",
              "AI review needs an apiKey (or a baseUrl of a server that takes none)"
            )
          }
          yield* upsertSettings(sql, next).pipe(Effect.orDie)
          return toSettings(next)
        }
      )

      const reviewConfig = Effect.fn("AiSettings.reviewConfig")(function*(repo: RepoRecord) {
        const row = yield* settings(repo)
        if (row.api_key_enc === null) return { settings: row, apiKey: Option.none() }
        const key = yield* openApiKey(crypto, repo.orgId, repo.id, row.api_key_enc).pipe(
          Effect.map((plain) => Option.some(Redacted.make(plain, { label: "AiApiKey" }))),
          // A key that does not open (another repository's, a changed master key) is no key.
          Effect.catchTag(
            "DecryptError",
            () => Effect.as(Effect.logWarning("AI review: the stored provider key could not be opened"), Option.none())
          )
        )
        return { settings: row, apiKey: key }
      })

      return AiSettings.of({ get, update, settings, reviewConfig })
    })
  )
}

/** Fills the pull requests' `AiReviewGate`: merges wait for the review where AI review is enabled. */
export const AiReviewGateLive = Layer.effect(
  AiReviewGate,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      required: (repoId: string) =>
        findSettings(sql, repoId).pipe(
          Effect.orDie,
          Effect.map((row) => Option.isSome(row) && row.value.enabled)
        )
    }
  })
)

/**
 * A transfer moves the repository to `toOrgId` (in the caller's transaction): its AI settings
 * follow, the provider key re-encrypted under the target organization's key.
 */
export const moveAiSettings = (repoId: string, fromOrgId: string, toOrgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = yield* findSettings(sql, repoId)
    if (Option.isNone(row)) return
    const key = row.value.api_key_enc
    const moved = key === null ? null : yield* moveApiKey(fromOrgId, toOrgId, repoId, key)
    yield* moveSettingsRow(sql, repoId, toOrgId, moved)
  })
