import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { StorageUsage } from "../../schemas/git/Lifecycle.ts"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { enqueueMails } from "../mail/MailOutbox.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import { lifecycle, perPlan } from "../tenancy/Plans.ts"
import {
  organizationPlanExpression,
  organizationSlugs,
  organizationStorageOverrideExpression,
  ownerEmails
} from "../tenancy/Tenancy.ts"

/** Storage per organization, from the plan table. */
export const storageLimitBytes = perPlan((p) => p.storageBytes)

export interface StorageStanding {
  readonly usedBytes: number
  readonly limitBytes: number
  /** Share of the limit used, one decimal. */
  readonly percent: number
  /** At 100%: pushes, LFS uploads, merges and server-side commits are refused, fetches continue (GUIDE §16). */
  readonly blocked: boolean
  /** At 80% or more: pushes carry a warning. */
  readonly warning: string | undefined
}

/**
 * An organization's plan, its storage override (the admin API's "100 GB+") and the bytes of
 * its live repositories (`sum(bigint)` is a `numeric`: a string). Trashed repositories stop
 * counting at their deletion.
 */
const UsageRow = Schema.Struct({
  plan: Schema.NullOr(Plan),
  storage_limit_bytes: Schema.NullOr(Int8),
  used: Schema.NumberFromString
})

const percentOf = (used: number, limit: number) => Math.round((used / limit) * 1000) / 10

/** How much of its plan's storage an organization uses (packs + LFS of its live repositories). */
export const storageStanding = (orgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`
      SELECT ${organizationPlanExpression(sql, orgId)} AS plan,
        ${organizationStorageOverrideExpression(sql, orgId)} AS storage_limit_bytes,
        coalesce(sum(r.pack_bytes + r.lfs_bytes), 0) AS used
      FROM repositories r WHERE r.org_id = ${orgId} AND r.deleted_at IS NULL`.pipe(decodeRows(UsageRow), Effect.orDie)
    const limitBytes = row?.storage_limit_bytes ?? storageLimitBytes[row?.plan ?? "free"]
    const usedBytes = row?.used ?? 0
    const percent = percentOf(usedBytes, limitBytes)
    return {
      usedBytes,
      limitBytes,
      percent,
      blocked: usedBytes >= limitBytes,
      warning: percent >= lifecycle.storageWarningPercent
        ? `the organization uses ${percent}% of its plan's storage`
        : undefined
    } satisfies StorageStanding
  })

const RepoBytes = Schema.Struct({ name: Schema.String, bytes: Int8 })

/** `GET /api/v1/code/storage`: the standing with each live repository's bytes, largest first. */
export const storageUsage = (orgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const standing = yield* storageStanding(orgId)
    const repositories = yield* sql`
      SELECT name, pack_bytes + lfs_bytes AS bytes FROM repositories
      WHERE org_id = ${orgId} AND deleted_at IS NULL ORDER BY bytes DESC, name`.pipe(
      decodeRows(RepoBytes),
      Effect.orDie
    )
    return {
      usedBytes: standing.usedBytes,
      limitBytes: standing.limitBytes,
      percent: standing.percent,
      repositories
    } satisfies StorageUsage
  })

const CrossedRow = Schema.Struct({ crossed_at: Schema.Date })

/**
 * One e-mail to the owners per crossing of the warning line (GUIDE §16): the first push at
 * or above it records the crossing and enqueues the mails in one transaction; dropping
 * below re-arms it.
 */
export const noteStorageStanding = (orgId: string, standing: StorageStanding) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (standing.warning === undefined) {
      yield* sql`DELETE FROM storage_warnings WHERE org_id = ${orgId}`
      return
    }
    yield* sql.withTransaction(Effect.gen(function*() {
      const crossed = yield* sql`
        INSERT INTO storage_warnings (org_id) VALUES (${orgId}) ON CONFLICT (org_id) DO NOTHING
        RETURNING crossed_at`.pipe(decodeRows(CrossedRow))
      if (crossed.length === 0) return
      const owners = yield* ownerEmails(sql, orgId)
      const [org] = yield* organizationSlugs(sql, [orgId])
      const stamp = crossed[0].crossed_at.toISOString()
      const slug = org?.slug ?? orgId
      yield* enqueueMails(owners.map((email) => ({
        idempotencyKey: `storage-warning:${orgId}:${stamp}:${email}`,
        to: email,
        subject: `Canopy: ${slug} uses ${standing.percent}% of its storage`,
        text: `The organization ${slug} uses ${standing.usedBytes} of ${standing.limitBytes} bytes ` +
          `(${standing.percent}%). At 100% pushes, LFS uploads, merges and server-side commits are refused ` +
          `until space is freed (delete and purge repositories) or the plan changes.`
      })))
    }))
  }).pipe(Effect.orDie)
