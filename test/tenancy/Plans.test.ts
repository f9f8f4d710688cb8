import { describe, expect, it } from "vitest"
import { optionPlan, planIncludes } from "../../services/protection/PlanGating.ts"
import { lifecycle, nextPlanFor, plans } from "../../services/tenancy/Plans.ts"
import { deliveryRetentionDays, planAbove, webhooksPerScope } from "../../services/webhooks/Limits.ts"

const GiB = 1024 ** 3
const MiB = 1024 ** 2

/** The one plan table (GUIDE §16) holds both specs' figures, and the limits elsewhere read it. */
describe("the plan table", () => {
  it("holds every per-plan figure of both specs, Hobby with Free's code-hosting limits", () => {
    expect(plans.free).toMatchObject({
      requestsPerMinute: 50,
      eventsPerMinute: 100,
      storageBytes: 1 * GiB,
      maxFileBytes: 25 * MiB,
      ciMinutesPerMonth: 100,
      ciConcurrentJobs: 1,
      ciTimeoutSeconds: 900,
      webhooksPerRepository: 3,
      webhookRetentionDays: 7
    })
    expect(plans.hobby).toMatchObject({
      requestsPerMinute: 100,
      eventsPerMinute: 1_000,
      storageBytes: 1 * GiB,
      maxFileBytes: 25 * MiB,
      ciMinutesPerMonth: 100,
      webhooksPerRepository: 3
    })
    expect(plans.pro).toMatchObject({
      requestsPerMinute: 300,
      eventsPerMinute: 10_000,
      storageBytes: 10 * GiB,
      maxFileBytes: 100 * MiB,
      ciMinutesPerMonth: 1_000,
      ciConcurrentJobs: 5,
      webhooksPerRepository: 20,
      webhookRetentionDays: 30
    })
    expect(plans.enterprise).toMatchObject({
      requestsPerMinute: 1_000,
      eventsPerMinute: null,
      storageBytes: 100 * GiB,
      maxFileBytes: 250 * MiB,
      ciMinutesPerMonth: null,
      ciConcurrentJobs: 10,
      webhooksPerRepository: null,
      webhookRetentionDays: 90
    })
    expect(lifecycle).toMatchObject({ trashRetentionDays: 30, transferAcceptanceDays: 7, ciCacheExpiryDays: 7 })
  })

  it("is what the webhook and protection limits read", () => {
    expect(webhooksPerScope.hobby).toBe(3)
    expect(webhooksPerScope.enterprise).toBe(Number.POSITIVE_INFINITY)
    expect(deliveryRetentionDays).toEqual({ free: 7, hobby: 7, pro: 30, enterprise: 90 })
    expect(planAbove("hobby")).toBe("pro")
    expect(planAbove("pro")).toBe("enterprise")
    expect(nextPlanFor("free", (p) => p.storageBytes)).toBe("pro")
    expect(optionPlan.requiredApprovals).toBe("free")
    expect(optionPlan.requireStatusChecks).toBe("pro")
    expect(optionPlan.restrictPushUsers).toBe("enterprise")
    expect(planIncludes("hobby", "requireCodeOwnerReview")).toBe(false)
    expect(planIncludes("pro", "requireCodeOwnerReview")).toBe(true)
  })
})
