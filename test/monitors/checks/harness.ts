import { Effect, Layer } from "effect"
import {
  Checker,
  type CheckerOptions,
  type CheckResult,
  type CheckTarget
} from "../../../services/monitors/checks/Checker.ts"
import { OutboundGuard, type OutboundGuardOptions } from "../../../services/outbound/OutboundGuard.ts"

/** A check target with the defaults of a new http monitor. */
export const target = (overrides: Partial<CheckTarget> & Pick<CheckTarget, "url">): CheckTarget => ({
  checkType: "http",
  method: "GET",
  headers: {},
  expectedCode: 200,
  timeoutSeconds: 5,
  ...overrides
})

/** Runs one check through the real `Checker` and `OutboundGuard` layers. */
export const check = (
  t: CheckTarget,
  options: { guard?: OutboundGuardOptions; checker?: CheckerOptions } = {}
): Effect.Effect<CheckResult> =>
  Checker.use((checker) => checker.check(t)).pipe(
    Effect.provide(
      Checker.layerWith(options.checker ?? {}).pipe(
        Layer.provide(OutboundGuard.layer(options.guard ?? { allowPrivate: true }))
      )
    )
  )
