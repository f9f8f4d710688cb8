import type { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { nextPlanFor, perPlan } from "../tenancy/Plans.ts"

/**
 * Per-plan webhook limits, from the plan table. The count applies per repository, and per
 * organization for organization webhooks.
 */
export const webhooksPerScope = perPlan((p) => p.webhooksPerRepository ?? Number.POSITIVE_INFINITY)

/** The smallest plan whose count is above `plan`'s. */
export const planAbove = (plan: Plan): Plan => nextPlanFor(plan, (p) => p.webhooksPerRepository)

/** Days the delivery log is kept. */
export const deliveryRetentionDays = perPlan((p) => p.webhookRetentionDays)

/** After this long with nothing but failed attempts, a webhook is disabled and its owners e-mailed. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000

/** Delay before attempt `attempt + 1` after attempt `attempt` (1-based): interval × 1, 2, 5, then × 10. */
export const retryDelayMs = (attempt: number, retryIntervalSeconds: number): number =>
  retryIntervalSeconds * 1000 * ([1, 2, 5][attempt - 1] ?? 10)
