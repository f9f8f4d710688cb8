import type { Plan } from "../../schemas/tenancy/Tenancy.ts"

/** The spec's per-plan limits (spec 000, "Limits"). */
export const requestsPerMinute: Record<Plan, number> = {
  free: 50,
  hobby: 100,
  pro: 300,
  enterprise: 1000
}

/** Ingested events per minute above which events are sampled (spec 000, "Ingestion limits"); null = unlimited. */
export const eventsPerMinute: Record<Plan, number | null> = {
  free: 100,
  hobby: 1_000,
  pro: 10_000,
  enterprise: null
}
