import type { Plan } from "../../schemas/Tenancy.ts"

/** The spec's per-plan limits (spec 000, "Limits"). */
export const requestsPerMinute: Record<Plan, number> = {
  free: 50,
  hobby: 100,
  pro: 300,
  enterprise: 1000
}

/** Ingest events per minute; `Infinity` for enterprise (unlimited, never sampled). */
export const eventsPerMinute: Record<Plan, number> = {
  free: 100,
  hobby: 1000,
  pro: 10_000,
  enterprise: Number.POSITIVE_INFINITY
}
