import type { Plan } from "../../schemas/Tenancy.ts"

/** The spec's per-plan limits (spec 000, "Limits"). */
export const requestsPerMinute: Record<Plan, number> = {
  free: 50,
  hobby: 100,
  pro: 300,
  enterprise: 1000
}
