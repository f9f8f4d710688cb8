import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { AuditAction, type AuditEntry } from "../../schemas/protection/Audit.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `audit_log` table: its row, how the API presents it, and every statement on it.
 */

/** A stored audit entry (the columns `toEntry` reads). */
const EntryRow = Schema.Struct({
  id: Schema.String,
  action: AuditAction,
  actor_id: Schema.String,
  actor_username: Schema.String,
  repo_full_name: Schema.NullOr(Schema.String),
  ref: Schema.NullOr(Schema.String),
  rule_ids: Schema.Array(Schema.String),
  detail: Schema.String,
  created_at: Schema.Date
})
type EntryRow = typeof EntryRow.Type

const CountRow = Schema.Struct({ count: Schema.Int })

export const toEntry = (row: EntryRow): AuditEntry => ({
  id: row.id,
  action: row.action,
  actor: { id: row.actor_id, username: row.actor_username },
  repo: row.repo_full_name,
  ref: row.ref,
  ruleIds: row.rule_ids,
  detail: row.detail,
  createdAt: row.created_at.toISOString()
})

export interface NewAuditEntry {
  readonly orgId: string
  readonly action: AuditAction
  readonly actor: { readonly id: string; readonly username: string }
  readonly repo: { readonly id: string; readonly fullName: string } | null
  readonly ref: string | null
  readonly ruleIds: ReadonlyArray<string>
  readonly detail: string
}

/** What the audit list narrows by (already resolved: `repoFullName` is `org/repo`). */
export interface AuditConditions {
  readonly orgId: string
  readonly action?: AuditAction | undefined
  readonly repoFullName?: string | undefined
  readonly actorUsername?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
}

export const insertAuditEntry = (sql: SqlClient.SqlClient, entry: NewAuditEntry) =>
  sql`
    INSERT INTO audit_log (id, org_id, action, actor_id, actor_username, repo_id, repo_full_name, ref, rule_ids,
                           detail)
    VALUES (${makeId("audit")}, ${entry.orgId}, ${entry.action}, ${entry.actor.id}, ${entry.actor.username},
            ${entry.repo?.id ?? null}, ${entry.repo?.fullName ?? null}, ${entry.ref}, ${entry.ruleIds},
            ${entry.detail})`

const whereOf = (sql: SqlClient.SqlClient, filter: AuditConditions) => {
  const conditions = [sql`org_id = ${filter.orgId}`]
  if (filter.action !== undefined) conditions.push(sql`action = ${filter.action}`)
  if (filter.repoFullName !== undefined) {
    conditions.push(sql`lower(repo_full_name) = ${filter.repoFullName.toLowerCase()}`)
  }
  if (filter.actorUsername !== undefined) {
    conditions.push(sql`lower(actor_username) = ${filter.actorUsername.toLowerCase()}`)
  }
  if (filter.from !== undefined) conditions.push(sql`created_at >= ${filter.from}`)
  if (filter.to !== undefined) conditions.push(sql`created_at <= ${filter.to}`)
  return sql.and(conditions)
}

/** One page of the entries matching `filter`, newest first, and how many match in all. */
export const findAuditEntries = (
  sql: SqlClient.SqlClient,
  filter: AuditConditions,
  page: { readonly limit: number; readonly offset: number }
) =>
  Effect.gen(function*() {
    const where = whereOf(sql, filter)
    const rows = yield* sql`
      SELECT * FROM audit_log WHERE ${where} ORDER BY seq DESC
      LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(decodeRows(EntryRow))
    const [{ count }] = yield* sql`
      SELECT count(*)::int AS count FROM audit_log WHERE ${where}`.pipe(decodeRows(CountRow))
    return { rows, count }
  })
