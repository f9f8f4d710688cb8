import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AuditAction, type AuditEntry, type AuditList } from "../../schemas/protection/Audit.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"

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

const toEntry = (row: EntryRow): AuditEntry => ({
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

export interface AuditFilter {
  readonly action?: AuditAction | undefined
  /** Repository name (slug) within the organization. */
  readonly repo?: string | undefined
  /** Username of the actor. */
  readonly actor?: string | undefined
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly limit?: number | undefined
  readonly offset?: number | undefined
}

/** The organization's audit trail (GUIDE §12): bypasses of branch protection, newest first. */
export class AuditLog extends Context.Service<AuditLog, {
  record(entry: NewAuditEntry): Effect.Effect<void>
  list(org: { readonly id: string; readonly slug: string }, filter: AuditFilter): Effect.Effect<AuditList>
}>()("canopy/protection/AuditLog") {
  static readonly layer = Layer.effect(
    AuditLog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const record = (entry: NewAuditEntry) =>
        sql`
          INSERT INTO audit_log (id, org_id, action, actor_id, actor_username, repo_id, repo_full_name, ref, rule_ids,
                                 detail)
          VALUES (${makeId("audit")}, ${entry.orgId}, ${entry.action}, ${entry.actor.id}, ${entry.actor.username},
                  ${entry.repo?.id ?? null}, ${entry.repo?.fullName ?? null}, ${entry.ref}, ${entry.ruleIds},
                  ${entry.detail})`.pipe(Effect.orDie, Effect.asVoid)

      const list = Effect.fn("AuditLog.list")(
        function*(org: { readonly id: string; readonly slug: string }, filter: AuditFilter) {
          const conditions = [sql`org_id = ${org.id}`]
          if (filter.action !== undefined) conditions.push(sql`action = ${filter.action}`)
          if (filter.repo !== undefined) {
            conditions.push(sql`lower(repo_full_name) = ${`${org.slug}/${filter.repo}`.toLowerCase()}`)
          }
          if (filter.actor !== undefined) conditions.push(sql`lower(actor_username) = ${filter.actor.toLowerCase()}`)
          if (filter.from !== undefined) conditions.push(sql`created_at >= ${new Date(filter.from)}`)
          if (filter.to !== undefined) conditions.push(sql`created_at <= ${new Date(filter.to)}`)
          const where = sql.and(conditions)
          const rows = yield* sql`
            SELECT * FROM audit_log WHERE ${where} ORDER BY seq DESC
            LIMIT ${filter.limit ?? 100} OFFSET ${filter.offset ?? 0}`.pipe(decodeRows(EntryRow), Effect.orDie)
          const [{ count }] = yield* sql`
            SELECT count(*)::int AS count FROM audit_log WHERE ${where}`.pipe(decodeRows(CountRow), Effect.orDie)
          return { entries: rows.map(toEntry), count }
        }
      )

      return AuditLog.of({ record, list })
    })
  )
}
