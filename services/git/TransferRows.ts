import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import type { Transfer } from "../../schemas/git/Lifecycle.ts"
import { TransferState } from "../../schemas/git/Lifecycle.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import { organizationDirectory } from "../tenancy/Tenancy.ts"

/*
 * The `repo_transfers` table: its row and every statement on it. A pending transfer whose
 * `expires_at` passed is `expired`, whether or not the row says so yet (read with the
 * caller's clock, so TestClock moves it).
 */

export const TransferRow = Schema.Struct({
  id: Schema.String,
  repo_id: Schema.String,
  repo_name: Schema.String,
  repo_slug: Schema.String,
  /** Packs + LFS: what the target must have room for. */
  repo_bytes: Int8,
  requested_by: Schema.String,
  from_org_id: Schema.String,
  from_org_slug: Schema.String,
  to_org_id: Schema.String,
  to_org_slug: Schema.String,
  state: TransferState,
  expires_at: Schema.Date,
  decided_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type TransferRow = typeof TransferRow.Type

/** The state at `now`: a pending transfer past its expiry is expired. */
export const stateAt = (row: TransferRow, now: number) =>
  row.state === "pending" && row.expires_at.getTime() <= now ? "expired" as const : row.state

export const toTransfer = (row: TransferRow, now: number): Transfer => ({
  id: row.id,
  // The name it has (or will have) in the organization that holds it: same slug in both.
  repository: { id: row.repo_id, name: row.repo_name, fullName: `${row.from_org_slug}/${row.repo_slug}` },
  fromOrg: row.from_org_slug,
  toOrg: row.to_org_slug,
  state: stateAt(row, now),
  expiresAt: row.expires_at.toISOString(),
  createdAt: row.created_at.toISOString(),
  decidedAt: row.decided_at === null ? null : row.decided_at.toISOString()
})

/** Transfers with their repository and organizations, by `rest` (`WHERE …`, `ORDER BY …`). */
export const findTransfers = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`
    SELECT t.*, r.name AS repo_name, r.slug AS repo_slug, r.pack_bytes + r.lfs_bytes AS repo_bytes, f.slug AS from_org_slug, o.slug AS to_org_slug
    FROM repo_transfers t JOIN repositories r ON r.id = t.repo_id
    JOIN ${organizationDirectory(sql)} f ON f.id = t.from_org_id
    JOIN ${organizationDirectory(sql)} o ON o.id = t.to_org_id ${rest}`.pipe(
    decodeRows(TransferRow)
  )

export interface NewTransferRow {
  readonly id: string
  readonly repoId: string
  readonly fromOrgId: string
  readonly toOrgId: string
  readonly requestedBy: string
  readonly expiresAt: Date
  readonly now: Date
}

/** Fails on the unique index when the repository already has a pending transfer. */
export const insertTransfer = (sql: SqlClient.SqlClient, row: NewTransferRow) =>
  sql`
    INSERT INTO repo_transfers (id, repo_id, from_org_id, to_org_id, requested_by, expires_at, created_at)
    VALUES (${row.id}, ${row.repoId}, ${row.fromOrgId}, ${row.toOrgId}, ${row.requestedBy}, ${row.expiresAt},
      ${row.now})`

/** Pending transfers of a repository that expired by `now` are marked so (frees its pending slot). */
export const expirePending = (sql: SqlClient.SqlClient, repoId: string, now: Date) =>
  sql`UPDATE repo_transfers SET state = 'expired' WHERE repo_id = ${repoId} AND state = 'pending'
    AND expires_at <= ${now}`

/** Locks a transfer for its decision. */
export const lockTransfer = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT id FROM repo_transfers WHERE id = ${id} FOR UPDATE`

export const decideTransfer = (
  sql: SqlClient.SqlClient,
  id: string,
  decision: { readonly state: "accepted" | "declined" | "expired"; readonly by: string | null; readonly now: Date }
) =>
  sql`
    UPDATE repo_transfers SET state = ${decision.state}, decided_by = ${decision.by}, decided_at = ${decision.now}
    WHERE id = ${id}`

export const transferById = (sql: SqlClient.SqlClient, id: string) => findTransfers(sql, sql`WHERE t.id = ${id}`)

/** The organization's transfers, out and in, newest first. */
export const transfersOf = (sql: SqlClient.SqlClient, orgId: string) =>
  findTransfers(
    sql,
    sql`WHERE t.from_org_id = ${orgId} OR t.to_org_id = ${orgId} ORDER BY t.created_at DESC, t.id DESC`
  )
