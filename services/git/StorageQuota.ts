import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { StorageUsage } from "../../schemas/git/Lifecycle.ts"
import { enqueueMails } from "../mail/MailOutbox.ts"
import { lifecycle, perPlan } from "../tenancy/Plans.ts"
import { organizationSlugs, ownerEmails } from "../tenancy/Tenancy.ts"
import { organizationStorageUsage, repositoryBytesOf } from "./RepositoryRows.ts"
import { clearStorageCrossing, recordStorageCrossing } from "./StorageWarningRows.ts"

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

const percentOf = (used: number, limit: number) => Math.round((used / limit) * 1000) / 10

/** How much of its plan's storage an organization uses (packs + LFS of its live repositories). */
export const storageStanding = (orgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* organizationStorageUsage(sql, orgId).pipe(Effect.orDie)
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

/** `GET /api/v1/code/storage`: the standing with each live repository's bytes, largest first. */
export const storageUsage = (orgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const standing = yield* storageStanding(orgId)
    const repositories = yield* repositoryBytesOf(sql, orgId).pipe(Effect.orDie)
    return {
      usedBytes: standing.usedBytes,
      limitBytes: standing.limitBytes,
      percent: standing.percent,
      repositories
    } satisfies StorageUsage
  })

/**
 * One e-mail to the owners per crossing of the warning line (GUIDE §16): the first push at
 * or above it records the crossing and enqueues the mails in one transaction; dropping
 * below re-arms it.
 */
export const noteStorageStanding = (orgId: string, standing: StorageStanding) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (standing.warning === undefined) {
      yield* clearStorageCrossing(sql, orgId)
      return
    }
    yield* sql.withTransaction(Effect.gen(function*() {
      const crossed = yield* recordStorageCrossing(sql, orgId)
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
