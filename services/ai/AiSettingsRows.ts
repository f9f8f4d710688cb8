import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { AutonomyLevel, FocusArea, ModelProvider } from "../../schemas/ai/AiSettings.ts"
import { decodeRows } from "../platform/Rows.ts"

/* The `ai_settings` table: its row and every statement on it. */

export const AiSettingsRow = Schema.Struct({
  repo_id: Schema.String,
  org_id: Schema.String,
  enabled: Schema.Boolean,
  model_provider: ModelProvider,
  model_name: Schema.String,
  base_url: Schema.NullOr(Schema.String),
  api_key_enc: Schema.NullOr(Schema.String),
  auto_review_prs: Schema.Boolean,
  review_drafts: Schema.Boolean,
  autonomy_level: AutonomyLevel,
  require_human_approval: Schema.Boolean,
  focus_areas: Schema.Array(FocusArea)
})
export type AiSettingsRow = typeof AiSettingsRow.Type

export const findSettings = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT * FROM ai_settings WHERE repo_id = ${repoId}`.pipe(
    decodeRows(AiSettingsRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

export const upsertSettings = (sql: SqlClient.SqlClient, row: AiSettingsRow) =>
  sql`
    INSERT INTO ai_settings (repo_id, org_id, enabled, model_provider, model_name, base_url, api_key_enc,
      auto_review_prs, review_drafts, autonomy_level, require_human_approval, focus_areas, updated_at)
    VALUES (${row.repo_id}, ${row.org_id}, ${row.enabled}, ${row.model_provider}, ${row.model_name},
      ${row.base_url}, ${row.api_key_enc}, ${row.auto_review_prs}, ${row.review_drafts}, ${row.autonomy_level},
      ${row.require_human_approval}, ${JSON.stringify(row.focus_areas)}::jsonb, now())
    ON CONFLICT (repo_id) DO UPDATE SET
      enabled = EXCLUDED.enabled, model_provider = EXCLUDED.model_provider, model_name = EXCLUDED.model_name,
      base_url = EXCLUDED.base_url, api_key_enc = EXCLUDED.api_key_enc,
      auto_review_prs = EXCLUDED.auto_review_prs, review_drafts = EXCLUDED.review_drafts,
      autonomy_level = EXCLUDED.autonomy_level, require_human_approval = EXCLUDED.require_human_approval,
      focus_areas = EXCLUDED.focus_areas, updated_at = now()`

export const moveSettingsRow = (sql: SqlClient.SqlClient, repoId: string, toOrgId: string, apiKeyEnc: string | null) =>
  sql`UPDATE ai_settings SET org_id = ${toOrgId}, api_key_enc = ${apiKeyEnc}, updated_at = now()
    WHERE repo_id = ${repoId}`
