import type { Plan } from "../../schemas/tenancy/Tenancy.ts"

/**
 * Per-plan webhook limits (spec 001 "Limits"; GUIDE §12: Hobby takes Free's code-hosting
 * limits). The count applies per repository, and per organization for organization webhooks.
 */
export const webhooksPerScope: Record<Plan, number> = {
  free: 3,
  hobby: 3,
  pro: 20,
  enterprise: Number.POSITIVE_INFINITY
}

/** The smallest plan whose count is above `current`. */
export const planAbove = (plan: Plan): Plan => plan === "free" || plan === "hobby" ? "pro" : "enterprise"

/** Days the delivery log is kept. */
export const deliveryRetentionDays: Record<Plan, number> = {
  free: 7,
  hobby: 7,
  pro: 30,
  enterprise: 90
}

/** After this long with nothing but failed attempts, a webhook is disabled and its owners e-mailed. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000

/** Delay before attempt `attempt + 1` after attempt `attempt` (1-based): interval × 1, 2, 5, then × 10. */
export const retryDelayMs = (attempt: number, retryIntervalSeconds: number): number =>
  retryIntervalSeconds * 1000 * ([1, 2, 5][attempt - 1] ?? 10)
