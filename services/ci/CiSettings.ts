import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { CiConfig, CiVariable, CiVariableList, PutCiVariable, UpdateCiConfig } from "../../schemas/ci/Ci.ts"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { Crypto } from "../platform/Crypto.ts"
import { ciTimeoutSeconds } from "../tenancy/Plans.ts"
import {
  deleteVariable,
  merged,
  readConfig,
  readVariables,
  replaceVariableValue,
  upsertVariable,
  type VariableRow,
  writeConfig
} from "./CiConfigRows.ts"
import { moveVariable, openVariable, sealVariable } from "./VariableCrypto.ts"

/** What a job's environment gets from the repository's variables, and the values to mask. */
export interface JobVariables {
  readonly env: Readonly<Record<string, string>>
  readonly secrets: ReadonlyArray<string>
}

const toVariable = (row: VariableRow): CiVariable => ({
  name: row.name,
  secret: row.secret,
  value: row.secret ? null : row.value,
  hasValue: true,
  updatedAt: row.updated_at.toISOString()
})

/**
 * CI configuration and variables of a repository (GUIDE §14). Secret values are encrypted
 * at rest and only ever decrypted into a job's environment (and its log masker).
 */
export class CiSettings extends Context.Service<CiSettings, {
  config(repo: RepoRecord): Effect.Effect<CiConfig>
  updateConfig(repo: RepoRecord, plan: Plan, patch: UpdateCiConfig): Effect.Effect<CiConfig, ValidationError>
  variables(repo: RepoRecord): Effect.Effect<CiVariableList>
  putVariable(
    repo: RepoRecord,
    name: string,
    input: PutCiVariable
  ): Effect.Effect<{ readonly variable: CiVariable; readonly created: boolean }>
  removeVariable(repo: RepoRecord, name: string): Effect.Effect<void, NotFound>
  jobVariables(repo: RepoRecord): Effect.Effect<JobVariables>
}>()("canopy/ci/CiSettings") {
  static readonly layer = Layer.effect(
    CiSettings,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const crypto = yield* Crypto

      const config = (repo: RepoRecord) => readConfig(sql, repo.id).pipe(Effect.orDie)

      const updateConfig = Effect.fn("CiSettings.updateConfig")(
        function*(repo: RepoRecord, plan: Plan, patch: UpdateCiConfig) {
          const ceiling = ciTimeoutSeconds[plan]
          if (patch.timeout !== undefined && patch.timeout > ceiling) {
            return yield* new ValidationError({
              message: `timeout is at most ${ceiling} seconds on the ${plan} plan`,
              details: [{ path: "timeout", message: `at most ${ceiling}` }]
            })
          }
          const next = merged(yield* config(repo), patch)
          yield* writeConfig(sql, repo.id, next).pipe(Effect.orDie)
          return next
        }
      )

      const variables = (repo: RepoRecord) =>
        readVariables(sql, repo.id).pipe(
          Effect.orDie,
          Effect.map((rows) => ({ variables: rows.map(toVariable), count: rows.length }))
        )

      const putVariable = Effect.fn("CiSettings.putVariable")(
        function*(repo: RepoRecord, name: string, input: PutCiVariable) {
          const secret = input.secret ?? false
          const stored = secret ? yield* sealVariable(crypto, repo.orgId, repo.id, name, input.value) : input.value
          const created = yield* upsertVariable(sql, repo.id, name, secret, stored).pipe(Effect.orDie)
          const rows = yield* readVariables(sql, repo.id).pipe(Effect.orDie)
          const row = rows.find((candidate) => candidate.name === name)!
          return { variable: toVariable(row), created }
        }
      )

      const removeVariable = Effect.fn("CiSettings.removeVariable")(function*(repo: RepoRecord, name: string) {
        const removed = yield* deleteVariable(sql, repo.id, name).pipe(Effect.orDie)
        if (!removed) return yield* new NotFound({ message: `Variable '${name}' not found` })
      })

      const jobVariables = Effect.fn("CiSettings.jobVariables")(function*(repo: RepoRecord) {
        const env: Record<string, string> = {}
        const secrets: Array<string> = []
        for (const row of yield* readVariables(sql, repo.id).pipe(Effect.orDie)) {
          if (!row.secret) {
            env[row.name] = row.value
            continue
          }
          const value = yield* openVariable(crypto, repo.orgId, repo.id, row.name, row.value).pipe(Effect.orDie)
          env[row.name] = value
          secrets.push(value)
        }
        return { env, secrets }
      })

      return CiSettings.of({ config, updateConfig, variables, putVariable, removeVariable, jobVariables })
    })
  )
}

/**
 * A transfer moves the repository to `toOrgId` (in the caller's transaction): its secret
 * variables are re-encrypted under the target organization's key.
 */
export const moveCiSecrets = (repoId: string, fromOrgId: string, toOrgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const variable of yield* readVariables(sql, repoId)) {
      if (!variable.secret) continue
      const value = yield* moveVariable(fromOrgId, toOrgId, repoId, variable.name, variable.value)
      yield* replaceVariableValue(sql, repoId, variable.name, value)
    }
  })
