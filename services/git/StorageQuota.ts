import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { decodeRows } from "../platform/Rows.ts"
import { perPlan } from "../tenancy/Plans.ts"

/** Storage per organization, from the plan table. */
export const storageLimitBytes = perPlan((p) => p.storageBytes)

export interface StorageStanding {
  readonly usedBytes: number
  readonly limitBytes: number
  /** At 100%: pushes and LFS uploads are refused, fetches continue (spec "Repository lifecycle"). */
  readonly blocked: boolean
  /** At 80% or more: pushes carry a warning. */
  readonly warning: string | undefined
}

/** An organization's plan and the bytes of its live repositories (`sum(bigint)` is a `numeric`: a string). */
const UsageRow = Schema.Struct({ plan: Plan, used: Schema.NumberFromString })

/** How much of its plan's storage an organization uses (packs + LFS of its live repositories). */
export const storageStanding = (orgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`
      SELECT o.plan, coalesce(sum(r.pack_bytes + r.lfs_bytes), 0) AS used
      FROM organizations o LEFT JOIN repositories r ON r.org_id = o.id AND r.deleted_at IS NULL
      WHERE o.id = ${orgId} GROUP BY o.plan`.pipe(decodeRows(UsageRow), Effect.orDie)
    const limitBytes = storageLimitBytes[row?.plan ?? "free"]
    const usedBytes = row?.used ?? 0
    const percent = Math.floor((usedBytes / limitBytes) * 100)
    return {
      usedBytes,
      limitBytes,
      blocked: usedBytes >= limitBytes,
      warning: percent >= 80 ? `the organization uses ${percent}% of its plan's storage` : undefined
    } satisfies StorageStanding
  })
