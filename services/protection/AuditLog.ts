import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AuditAction, AuditList } from "../../schemas/protection/Audit.ts"
import { findAuditEntries, insertAuditEntry, type NewAuditEntry, toEntry } from "./AuditLogRows.ts"

export type { NewAuditEntry } from "./AuditLogRows.ts"

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

      const record = (entry: NewAuditEntry) => insertAuditEntry(sql, entry).pipe(Effect.orDie, Effect.asVoid)

      const list = Effect.fn("AuditLog.list")(
        function*(org: { readonly id: string; readonly slug: string }, filter: AuditFilter) {
          const { count, rows } = yield* findAuditEntries(sql, {
            orgId: org.id,
            action: filter.action,
            repoFullName: filter.repo === undefined ? undefined : `${org.slug}/${filter.repo}`,
            actorUsername: filter.actor,
            from: filter.from === undefined ? undefined : new Date(filter.from),
            to: filter.to === undefined ? undefined : new Date(filter.to)
          }, { limit: filter.limit ?? 100, offset: filter.offset ?? 0 }).pipe(Effect.orDie)
          return { entries: rows.map(toEntry), count }
        }
      )

      return AuditLog.of({ record, list })
    })
  )
}
