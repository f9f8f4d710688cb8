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

/** CI minutes per calendar month (spec 001 "Limits"; Hobby as Free); null = unlimited. */
export const ciMinutesPerMonth: Record<Plan, number | null> = {
  free: 100,
  hobby: 100,
  pro: 1_000,
  enterprise: null
}

/** CI jobs running at once per organization, cluster-wide (spec 001 "Limits"). */
export const ciConcurrentJobs: Record<Plan, number> = {
  free: 1,
  hobby: 1,
  pro: 5,
  enterprise: 10
}

/** The ceiling of a CI job's timeout, seconds (spec 001 "Limits": 15 minutes on every plan). */
export const ciTimeoutSeconds: Record<Plan, number> = {
  free: 900,
  hobby: 900,
  pro: 900,
  enterprise: 900
}
