import { Effect } from "effect"
import { count, webhookDeliveries } from "../metrics/Metrics.ts"
import type { AttemptRecord } from "./QueueRows.ts"

/** What a logged attempt means for `canopy_webhook_deliveries_total`: delivered, to be retried, or given up. */
const outcomeOf = (status: AttemptRecord["status"]) => status === "pending" ? "retry" : status

/** Counts attempts once they are logged (so a failed log is not counted as delivered). */
export const countAttempts = (attempts: ReadonlyArray<AttemptRecord>) =>
  Effect.forEach(attempts, (attempt) => count(webhookDeliveries, { outcome: outcomeOf(attempt.status) }), {
    discard: true
  })
