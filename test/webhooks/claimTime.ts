import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * When the webhook's first delivery was last claimed (ms, the app's clock). An attempt whose
 * outcome is unknown (the runner stopped while it was in flight) is retried when its claim
 * lapses, the retry delay after this time.
 */
export const claimTime = (sql: SqlClient.SqlClient, webhookId: string) =>
  Effect.map(
    sql<{ claimedAt: Date | null }>`
      SELECT claimed_at AS "claimedAt" FROM webhook_deliveries WHERE webhook_id = ${webhookId} ORDER BY seq LIMIT 1`,
    (rows) => {
      const claimedAt = rows[0]?.claimedAt
      if (claimedAt == null) throw new Error(`webhook ${webhookId}: its first delivery is not claimed`)
      return claimedAt.getTime()
    }
  )
