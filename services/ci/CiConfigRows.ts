import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { CiConfig, UpdateCiConfig } from "../../schemas/ci/Ci.ts"
import { ProjectType } from "../../schemas/ci/Ci.ts"
import { decodeRows } from "../platform/Rows.ts"

/** The statements of `ci_configs` and `ci_variables`. */

export const DEFAULT_CONFIG: CiConfig = {
  enabled: false,
  projectType: "auto",
  installCommand: null,
  testCommand: null,
  lintCommand: null,
  buildCommand: null,
  timeout: 600,
  cacheEnabled: true,
  triggerOnPush: true,
  triggerOnPR: true
}

const ConfigRow = Schema.Struct({
  enabled: Schema.Boolean,
  project_type: ProjectType,
  install_command: Schema.NullOr(Schema.String),
  test_command: Schema.NullOr(Schema.String),
  lint_command: Schema.NullOr(Schema.String),
  build_command: Schema.NullOr(Schema.String),
  timeout: Schema.Int,
  cache_enabled: Schema.Boolean,
  trigger_on_push: Schema.Boolean,
  trigger_on_pr: Schema.Boolean
})

const toConfig = (row: typeof ConfigRow.Type): CiConfig => ({
  enabled: row.enabled,
  projectType: row.project_type,
  installCommand: row.install_command,
  testCommand: row.test_command,
  lintCommand: row.lint_command,
  buildCommand: row.build_command,
  timeout: row.timeout,
  cacheEnabled: row.cache_enabled,
  triggerOnPush: row.trigger_on_push,
  triggerOnPR: row.trigger_on_pr
})

export const readConfig = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`
    SELECT enabled, project_type, install_command, test_command, lint_command, build_command, timeout,
           cache_enabled, trigger_on_push, trigger_on_pr
    FROM ci_configs WHERE repo_id = ${repoId}`.pipe(
    decodeRows(ConfigRow),
    Effect.map((rows) => rows.length === 0 ? DEFAULT_CONFIG : toConfig(rows[0]))
  )

export const merged = (current: CiConfig, patch: UpdateCiConfig): CiConfig => ({
  enabled: patch.enabled ?? current.enabled,
  projectType: patch.projectType ?? current.projectType,
  installCommand: patch.installCommand === undefined ? current.installCommand : patch.installCommand,
  testCommand: patch.testCommand === undefined ? current.testCommand : patch.testCommand,
  lintCommand: patch.lintCommand === undefined ? current.lintCommand : patch.lintCommand,
  buildCommand: patch.buildCommand === undefined ? current.buildCommand : patch.buildCommand,
  timeout: patch.timeout ?? current.timeout,
  cacheEnabled: patch.cacheEnabled ?? current.cacheEnabled,
  triggerOnPush: patch.triggerOnPush ?? current.triggerOnPush,
  triggerOnPR: patch.triggerOnPR ?? current.triggerOnPR
})

export const writeConfig = (sql: SqlClient.SqlClient, repoId: string, config: CiConfig) =>
  sql`
    INSERT INTO ci_configs (repo_id, enabled, project_type, install_command, test_command, lint_command,
                            build_command, timeout, cache_enabled, trigger_on_push, trigger_on_pr)
    VALUES (${repoId}, ${config.enabled}, ${config.projectType}, ${config.installCommand}, ${config.testCommand},
            ${config.lintCommand}, ${config.buildCommand}, ${config.timeout}, ${config.cacheEnabled},
            ${config.triggerOnPush}, ${config.triggerOnPR})
    ON CONFLICT (repo_id) DO UPDATE SET
      enabled = EXCLUDED.enabled, project_type = EXCLUDED.project_type,
      install_command = EXCLUDED.install_command, test_command = EXCLUDED.test_command,
      lint_command = EXCLUDED.lint_command, build_command = EXCLUDED.build_command,
      timeout = EXCLUDED.timeout, cache_enabled = EXCLUDED.cache_enabled,
      trigger_on_push = EXCLUDED.trigger_on_push, trigger_on_pr = EXCLUDED.trigger_on_pr, updated_at = now()`

export const VariableRow = Schema.Struct({
  name: Schema.String,
  secret: Schema.Boolean,
  value: Schema.String,
  updated_at: Schema.Date
})
export type VariableRow = typeof VariableRow.Type

export const readVariables = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT name, secret, value, updated_at FROM ci_variables WHERE repo_id = ${repoId} ORDER BY name`.pipe(
    decodeRows(VariableRow)
  )

/** Inserts or replaces; true when the variable is new. */
export const upsertVariable = (
  sql: SqlClient.SqlClient,
  repoId: string,
  name: string,
  secret: boolean,
  value: string
) =>
  sql<{ created: boolean }>`
    INSERT INTO ci_variables (repo_id, name, secret, value) VALUES (${repoId}, ${name}, ${secret}, ${value})
    ON CONFLICT (repo_id, name) DO UPDATE SET secret = EXCLUDED.secret, value = EXCLUDED.value, updated_at = now()
    RETURNING (xmax = 0) AS created`.pipe(Effect.map((rows) => rows[0]?.created === true))

export const deleteVariable = (sql: SqlClient.SqlClient, repoId: string, name: string) =>
  sql`DELETE FROM ci_variables WHERE repo_id = ${repoId} AND name = ${name} RETURNING 1`.pipe(
    Effect.map((rows) => rows.length > 0)
  )

export const replaceVariableValue = (sql: SqlClient.SqlClient, repoId: string, name: string, value: string) =>
  sql`UPDATE ci_variables SET value = ${value} WHERE repo_id = ${repoId} AND name = ${name}`
