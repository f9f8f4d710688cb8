import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { StorageUsage } from "../../schemas/git/Lifecycle.ts"
import { storageUsage } from "./StorageQuota.ts"

/** `GET /api/v1/code/storage` (GUIDE §16): the organization's storage against its plan. */
export class StorageReport extends Context.Service<StorageReport, {
  usage(orgId: string): Effect.Effect<StorageUsage>
}>()("canopy/git/StorageReport") {
  static readonly layer = Layer.effect(
    StorageReport,
    Effect.map(SqlClient.SqlClient, (sql) =>
      StorageReport.of({
        usage: (orgId) => Effect.provideService(storageUsage(orgId), SqlClient.SqlClient, sql)
      }))
  )
}
