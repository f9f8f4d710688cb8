import { Cause, Context, Effect, Layer } from "effect"
import { OutboundGuard } from "../../outbound/OutboundGuard.ts"
import { apiCheck } from "./api.ts"
import { dnsCheck } from "./dns.ts"
import { httpCheck } from "./http.ts"
import { type CheckContext, makeCheckContext } from "./network.ts"
import { tcpCheck } from "./tcp.ts"
import {
  type CheckerOptions,
  CheckFailure,
  type CheckResult,
  type CheckSuccess,
  type CheckTarget,
  type CheckType
} from "./types.ts"
import { websocketCheck } from "./websocket.ts"

export * from "./types.ts"

const CHECKS: Record<
  CheckType,
  (context: CheckContext, target: CheckTarget) => Effect.Effect<CheckSuccess, CheckFailure>
> = {
  http: httpCheck,
  api: apiCheck,
  tcp: tcpCheck,
  dns: dnsCheck,
  websocket: websocketCheck
}

export const DEFAULT_TIMEOUT_SECONDS = 30

/**
 * Fails after `seconds` of wall-clock time. Deliberately not the Effect Clock: a
 * check talks to the real network, so under a TestClock (scheduler tests) moving
 * the clock must not time out a check that is in flight.
 */
const realTimeout = (seconds: number) =>
  Effect.callback<never, CheckFailure>((resume) => {
    const timer = setTimeout(
      () => resume(Effect.fail(new CheckFailure({ message: `timed out after ${seconds}s` }))),
      seconds * 1000
    )
    return Effect.sync(() => clearTimeout(timer))
  })

const describeDefect = (defect: unknown) => defect instanceof Error ? defect.message : String(defect)

/**
 * Runs one check and never fails: every failure, including the timeout over
 * the whole check (all redirect hops) and unexpected defects, is a `down` result
 * with an `error`. Response time and the timeout are real elapsed time
 * (`performance.now`, `setTimeout`), whatever Clock the caller runs with.
 */
export const runCheck = (context: CheckContext, target: CheckTarget): Effect.Effect<CheckResult> =>
  Effect.suspend(() => {
    const timeoutSeconds = Number.isFinite(target.timeoutSeconds) && target.timeoutSeconds > 0
      ? target.timeoutSeconds
      : DEFAULT_TIMEOUT_SECONDS
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    const run = CHECKS[target.checkType]
    const check = run === undefined
      ? Effect.fail(new CheckFailure({ message: `unsupported check type: ${String(target.checkType)}` }))
      : Effect.suspend(() => run(context, { ...target, timeoutSeconds }))
    return check.pipe(
      Effect.raceFirst(realTimeout(timeoutSeconds)),
      Effect.matchCause({
        onSuccess: (success): CheckResult =>
          success.statusCode === undefined
            ? { status: "up", responseTimeMs: elapsed() }
            : { status: "up", responseTimeMs: elapsed(), statusCode: success.statusCode },
        onFailure: (cause): CheckResult => {
          const failure = Cause.findErrorOption(cause)
          if (failure._tag === "Some") {
            const { message, statusCode } = failure.value
            return statusCode === undefined
              ? { status: "down", responseTimeMs: elapsed(), error: message }
              : { status: "down", responseTimeMs: elapsed(), statusCode, error: message }
          }
          return {
            status: "down",
            responseTimeMs: elapsed(),
            error: `internal error: ${describeDefect(Cause.squash(cause))}`
          }
        }
      })
    )
  })

export class Checker extends Context.Service<Checker, {
  check(target: CheckTarget): Effect.Effect<CheckResult>
}>()("canopy/monitors/Checker") {
  /** Checker with system DNS and Node's bundled CA roots. */
  static readonly layer: Layer.Layer<Checker, never, OutboundGuard> = Layer.effect(
    Checker,
    OutboundGuard.useSync((guard) => makeChecker(makeCheckContext(guard, {})))
  )

  /** Checker with options (DNS servers for `dns` checks, extra CAs, user agent). */
  static layerWith(options: CheckerOptions): Layer.Layer<Checker, never, OutboundGuard> {
    return Layer.effect(
      Checker,
      OutboundGuard.useSync((guard) => makeChecker(makeCheckContext(guard, options)))
    )
  }
}

const makeChecker = (context: CheckContext) =>
  Checker.of({
    check: (target) =>
      runCheck(context, target).pipe(Effect.withSpan("Checker.check", { attributes: { checkType: target.checkType } }))
  })
