import type { ProtectionOption } from "../../schemas/protection/BranchProtection.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"

/*
 * The one plan table (GUIDE §16): every per-plan figure of both specs. No other file holds
 * a plan figure; limits elsewhere read this table. Hobby takes Free's code-hosting figures
 * wherever spec 001 names only Free, Pro and Enterprise (GUIDE §12). `null` = unlimited.
 */

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

/** Branch protection options per tier (spec 001 "Limits", GUIDE §12). */
const BASIC_PROTECTION: ReadonlyArray<ProtectionOption> = [
  "requirePullRequest",
  "requiredApprovals",
  "dismissStaleReviews",
  "allowForcePush",
  "allowDeletions"
]
const PRO_PROTECTION: ReadonlyArray<ProtectionOption> = [
  ...BASIC_PROTECTION,
  "requireStatusChecks",
  "requireCodeOwnerReview",
  "requireLinearHistory"
]
const ENTERPRISE_PROTECTION: ReadonlyArray<ProtectionOption> = [
  ...PRO_PROTECTION,
  "requireSignedCommits",
  "restrictPushUsers"
]

export interface PlanFigures {
  /** API requests per minute, per organization (spec 000 "Rate limits"). */
  readonly requestsPerMinute: number
  /** Ingested events per minute above which events are sampled (spec 000); null = unlimited. */
  readonly eventsPerMinute: number | null
  /** Storage of packs + LFS of live repositories, binary units (spec 001 "Limits"). */
  readonly storageBytes: number
  /** Largest LFS object (spec 001 "Max file size"). */
  readonly maxFileBytes: number
  /** CI minutes per calendar month; null = unlimited. */
  readonly ciMinutesPerMonth: number | null
  /** CI jobs holding a slot at once, cluster-wide. */
  readonly ciConcurrentJobs: number
  /** Longest CI job timeout a pipeline may set. */
  readonly ciTimeoutSeconds: number
  /** Webhooks per repository (and per organization for organization webhooks); null = unlimited. */
  readonly webhooksPerRepository: number | null
  /** Days the webhook delivery log is kept. */
  readonly webhookRetentionDays: number
  /** Branch protection options the plan includes. */
  readonly protectionOptions: ReadonlyArray<ProtectionOption>
}

/** Plans from the smallest up (the order "the next plan up" follows). */
export const planOrder: ReadonlyArray<Plan> = ["free", "hobby", "pro", "enterprise"]

export const plans: Readonly<Record<Plan, PlanFigures>> = {
  free: {
    requestsPerMinute: 50,
    eventsPerMinute: 100,
    storageBytes: 1 * GiB,
    maxFileBytes: 25 * MiB,
    ciMinutesPerMonth: 100,
    ciConcurrentJobs: 1,
    ciTimeoutSeconds: 15 * 60,
    webhooksPerRepository: 3,
    webhookRetentionDays: 7,
    protectionOptions: BASIC_PROTECTION
  },
  hobby: {
    requestsPerMinute: 100,
    eventsPerMinute: 1_000,
    storageBytes: 1 * GiB,
    maxFileBytes: 25 * MiB,
    ciMinutesPerMonth: 100,
    ciConcurrentJobs: 1,
    ciTimeoutSeconds: 15 * 60,
    webhooksPerRepository: 3,
    webhookRetentionDays: 7,
    protectionOptions: BASIC_PROTECTION
  },
  pro: {
    requestsPerMinute: 300,
    eventsPerMinute: 10_000,
    storageBytes: 10 * GiB,
    maxFileBytes: 100 * MiB,
    ciMinutesPerMonth: 1_000,
    ciConcurrentJobs: 5,
    ciTimeoutSeconds: 15 * 60,
    webhooksPerRepository: 20,
    webhookRetentionDays: 30,
    protectionOptions: PRO_PROTECTION
  },
  enterprise: {
    requestsPerMinute: 1_000,
    eventsPerMinute: null,
    // "100 GB+": the admin API may set more per organization (`storageLimitBytes`).
    storageBytes: 100 * GiB,
    maxFileBytes: 250 * MiB,
    ciMinutesPerMonth: null,
    ciConcurrentJobs: 10,
    ciTimeoutSeconds: 15 * 60,
    webhooksPerRepository: null,
    webhookRetentionDays: 90,
    protectionOptions: ENTERPRISE_PROTECTION
  }
}

/** Figures the spec gives for every plan alike (spec 001 "Limits"). */
export const lifecycle = {
  /** A trashed repository is purged this long after its deletion. */
  trashRetentionDays: 30,
  /** A transfer not accepted within this long expires. */
  transferAcceptanceDays: 7,
  /** CI cache entries unused this long are deleted. */
  ciCacheExpiryDays: 7,
  /** Share of the plan's storage from which pushes warn and the owners are e-mailed once. */
  storageWarningPercent: 80
} as const

/** The smallest plan above `plan` whose `figure` is larger (null = unlimited counts as larger); itself if none. */
export const nextPlanFor = (plan: Plan, figure: (figures: PlanFigures) => number | null): Plan => {
  const current = figure(plans[plan])
  const above = planOrder.slice(planOrder.indexOf(plan) + 1).find((candidate) => {
    const value = figure(plans[candidate])
    return current !== null && (value === null || value > current)
  })
  return above ?? plan
}

/** One figure of every plan, as a record by plan. */
export const perPlan = <A>(figure: (figures: PlanFigures) => A): Readonly<Record<Plan, A>> => ({
  free: figure(plans.free),
  hobby: figure(plans.hobby),
  pro: figure(plans.pro),
  enterprise: figure(plans.enterprise)
})

/** Per-plan request quota (spec 000). */
export const requestsPerMinute = perPlan((p) => p.requestsPerMinute)

/** Ingested events per minute above which events are sampled; null = unlimited. */
export const eventsPerMinute = perPlan((p) => p.eventsPerMinute)

/** CI minutes per calendar month; null = unlimited. */
export const ciMinutesPerMonth = perPlan((p) => p.ciMinutesPerMonth)

/** CI jobs running at once per organization, cluster-wide. */
export const ciConcurrentJobs = perPlan((p) => p.ciConcurrentJobs)

/** The ceiling of a CI job's timeout, seconds. */
export const ciTimeoutSeconds = perPlan((p) => p.ciTimeoutSeconds)
