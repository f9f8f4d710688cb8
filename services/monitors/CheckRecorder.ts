import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { HeartbeatEvent, MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { Events, type NewDomainEvent } from "../events/Events.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import type { CheckResult, CheckTarget } from "./checks/Checker.ts"
import { heartbeatRecorded, insertHeartbeat, lastSlotAt as lastHeartbeatSlot, recordCheck } from "./HeartbeatRows.ts"
import { MonitorRepository } from "./MonitorRepository.ts"
import type { MonitorRecord, MonitorSchedule, ShardedSchedule } from "./MonitorRows.ts"
import { type MonitorStatus, nextSlot, type Transition, transition } from "./MonitorState.ts"
import { accountIntervalStatement } from "./Uptime.ts"

/**
 * The SQL side of a monitor's schedule (the `Monitor` entity decides the timing):
 *
 * - `claim` takes a slot by compare-and-swap on `monitors.next_check_at`: exactly one
 *   caller — whichever runner, even two at once during a shard hand-off — moves it from
 *   the slot it saw to the next one, and only that caller runs the slot's check;
 * - `record` writes one attempt in one transaction: the heartbeat (unique per monitor,
 *   slot and attempt, so a replay is a no-op), the monitor's new status, the elapsed
 *   interval in the hourly uptime rollup, and the `heartbeat` / `monitor.status` domain
 *   events.
 *
 * Timestamps cross the boundary as epoch milliseconds. Postgres keeps microseconds
 * (`now()` defaults), so comparisons truncate to milliseconds.
 */

export type { MonitorSchedule } from "./MonitorRows.ts"

/** A claimed slot: the monitor's configuration at claim time and the slot it owns. */
export interface ClaimedSlot {
  readonly monitorId: string
  readonly slotAt: number
  /** `next_check_at` after the claim. */
  readonly nextCheckAt: number
  readonly frequency: number
  readonly retryInterval: number
  readonly target: CheckTarget
}

export interface AttemptInput {
  readonly monitorId: string
  readonly slotAt: number
  /** 0 for the scheduled check, 1, 2, … for retries of the same slot. */
  readonly attempt: number
  /** When the check started (epoch ms). */
  readonly checkedAt: number
  readonly result: CheckResult
}

export type RecordOutcome =
  | { readonly _tag: "Recorded"; readonly transition: Transition; readonly status: MonitorStatus }
  /** Nothing written: the attempt was already recorded, or the monitor is gone or inactive. */
  | { readonly _tag: "Skipped"; readonly reason: "duplicate" | "inactive" }

/** The checker's input from a stored monitor. */
export const toCheckTarget = (monitor: MonitorRecord): CheckTarget => ({
  checkType: monitor.checkType,
  url: monitor.url,
  method: monitor.method,
  headers: monitor.headers,
  body: monitor.body ?? undefined,
  expectedCode: monitor.expectedCode,
  timeoutSeconds: monitor.timeout,
  assertions: monitor.assertions ?? undefined,
  dnsRecordType: monitor.dnsRecordType ?? undefined,
  expectedValue: monitor.expectedValue ?? undefined
})

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repository = yield* MonitorRepository
  const events = yield* Events
  const { region } = yield* AppConfig

  const loadSchedule = repository.schedule

  const claim = (options: {
    readonly monitorId: string
    /** The `next_check_at` the caller saw. */
    readonly expected: number
    /** The slot to check (the expected one, or a later one of its grid after downtime). */
    readonly slotAt: number
    /** Frequency the caller saw; a concurrent change makes the claim fail (re-read). */
    readonly frequency: number
  }): Effect.Effect<Option.Option<ClaimedSlot>, SqlError> =>
    Effect.map(
      repository.claim({
        monitorId: options.monitorId,
        expected: options.expected,
        next: nextSlot(options.slotAt, options.frequency),
        frequency: options.frequency
      }),
      Option.map((monitor) => ({
        monitorId: monitor.id,
        slotAt: options.slotAt,
        nextCheckAt: monitor.nextCheckAt.getTime(),
        frequency: monitor.frequency,
        retryInterval: monitor.retryInterval,
        target: toCheckTarget(monitor)
      }))
    )

  /** Moves `next_check_at` from `expected` to `next` (a frequency change); false if it moved meanwhile. */
  const reschedule = repository.reschedule

  /** The slot of the newest heartbeat (epoch ms), if any. */
  const lastSlotAt = (monitorId: string): Effect.Effect<Option.Option<number>, SqlError> =>
    lastHeartbeatSlot(sql, monitorId)

  /** The current check target for a retry, if the monitor is still active. */
  const loadTarget = (monitorId: string): Effect.Effect<Option.Option<CheckTarget>, SqlError> =>
    Effect.map(repository.findActive(monitorId), Option.map(toCheckTarget))

  const record = (input: AttemptInput): Effect.Effect<RecordOutcome, SqlError> =>
    sql.withTransaction(Effect.gen(function*() {
      const locked = yield* repository.lockCheckState(input.monitorId)
      if (Option.isNone(locked) || !locked.value.active) return { _tag: "Skipped", reason: "inactive" } as const
      const monitor = locked.value

      const { result } = input
      const next = transition(monitor, result, monitor.degradedThresholdMs)
      const checkedAt = new Date(input.checkedAt)
      const slotAt = new Date(input.slotAt)
      const responseTimeMs = Math.max(0, Math.round(result.responseTimeMs))

      // A result older than the last one recorded (a check that outlived a shard hand-off)
      // keeps its heartbeat but does not move the status back in time.
      const stale = monitor.lastCheckedAt !== null && input.checkedAt < monitor.lastCheckedAt
      const applied: Transition = stale
        ? {
          ...next,
          status: monitor.status,
          consecutiveFailures: monitor.consecutiveFailures,
          changed: false,
          retry: false
        }
        : next

      const timestamp = checkedAt.toISOString()
      const published: Array<NewDomainEvent> = [HeartbeatEvent.make(monitor.orgId, {
        monitorId: input.monitorId,
        timestamp,
        status: next.heartbeatStatus,
        responseTime: responseTimeMs,
        ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
        ...(result.error === undefined ? {} : { error: result.error }),
        region,
        attempt: input.attempt
      })]
      if (applied.changed) {
        published.push(MonitorStatusEvent.make(monitor.orgId, {
          monitorId: input.monitorId,
          name: monitor.name,
          status: applied.status,
          previousStatus: monitor.status,
          timestamp
        }))
      }

      // One statement (one round trip): the heartbeat — unique per monitor, slot and attempt —
      // and, only if it was new, the uptime interval, the monitor's status and the events.
      const heartbeat = insertHeartbeat(sql, {
        monitorId: input.monitorId,
        slotAt,
        attempt: input.attempt,
        checkedAt,
        status: next.heartbeatStatus,
        responseTimeMs,
        statusCode: result.statusCode ?? null,
        error: result.error ?? null,
        region
      })
      const recorded = heartbeatRecorded(sql)
      // Uptime (see Uptime.ts): close the open interval [status_since, checkedAt) in the
      // status held so far, count this attempt in its hour, and open the next interval.
      const rollup = stale ? undefined : accountIntervalStatement(sql, {
        monitorId: input.monitorId,
        from: new Date(monitor.statusSince),
        to: checkedAt,
        status: monitor.status,
        checks: 1,
        failed: next.heartbeatStatus === "down" ? 1 : 0,
        responseTimeMs,
        checkedAt
      }, recorded)
      const status = stale ? undefined : repository.applyCheck(input.monitorId, {
        status: applied.status,
        consecutiveFailures: applied.consecutiveFailures,
        checkedAt
      }, recorded)
      // In the same transaction: the events commit with the heartbeat or not at all. No
      // NOTIFY in it (it would serialise every check's commit cluster-wide): readers are
      // woken once it committed (`notifyCommitted`).
      const [row] = yield* recordCheck(sql, { heartbeat, rollup, status, events: published })
      if (row.recorded === 0) return { _tag: "Skipped", reason: "duplicate" } as const
      return { _tag: "Recorded", transition: applied, status: applied.status } as const
    })).pipe(Effect.tap((outcome) => outcome._tag === "Recorded" ? events.notifyCommitted : Effect.void))

  /**
   * The schedule of every active monitor on the given shards (the wake-up sweep), plus
   * those whose shard is not known yet for `shardCount` shards (`shard` null: assign it).
   */
  const activeSchedules = repository.shardSchedules

  /** Records the shard of each monitor (computed by the cluster from its id). */
  const assignShards = repository.assignShards

  return CheckRecorder.of({
    loadSchedule,
    claim,
    reschedule,
    lastSlotAt,
    loadTarget,
    record,
    activeSchedules,
    assignShards
  })
})

export class CheckRecorder extends Context.Service<CheckRecorder, {
  readonly loadSchedule: (monitorId: string) => Effect.Effect<Option.Option<MonitorSchedule>, SqlError>
  readonly claim: (options: {
    readonly monitorId: string
    readonly expected: number
    readonly slotAt: number
    readonly frequency: number
  }) => Effect.Effect<Option.Option<ClaimedSlot>, SqlError>
  readonly reschedule: (options: {
    readonly monitorId: string
    readonly expected: number
    readonly next: number
  }) => Effect.Effect<boolean, SqlError>
  readonly lastSlotAt: (monitorId: string) => Effect.Effect<Option.Option<number>, SqlError>
  readonly loadTarget: (monitorId: string) => Effect.Effect<Option.Option<CheckTarget>, SqlError>
  readonly record: (input: AttemptInput) => Effect.Effect<RecordOutcome, SqlError>
  readonly activeSchedules: (
    shards: ReadonlyArray<number>,
    shardCount: number
  ) => Effect.Effect<ReadonlyArray<ShardedSchedule>, SqlError>
  readonly assignShards: (
    assigned: ReadonlyArray<{ readonly id: string; readonly shard: number }>,
    shardCount: number
  ) => Effect.Effect<void, SqlError>
}>()("canopy/monitors/CheckRecorder") {
  static readonly layer: Layer.Layer<CheckRecorder, never, SqlClient.SqlClient | Events | AppConfig> = Layer.effect(
    CheckRecorder,
    make
  ).pipe(Layer.provide(MonitorRepository.layer))
}
