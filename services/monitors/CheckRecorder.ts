import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Events } from "../events/Events.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import * as GroupCommit from "../platform/GroupCommit.ts"
import type { CheckTarget } from "./checks/Checker.ts"
import { lastSlotAt as lastHeartbeatSlot } from "./HeartbeatRows.ts"
import { MonitorRepository } from "./MonitorRepository.ts"
import type { MonitorRecord, MonitorSchedule, ShardedSchedule } from "./MonitorRows.ts"
import { nextSlot } from "./MonitorState.ts"
import { type AttemptInput, recordBatch, type RecordOutcome } from "./RecordBatch.ts"

/**
 * The SQL side of a monitor's schedule (the `Monitor` entity decides the timing):
 *
 * - `claim` takes a slot by compare-and-swap on `monitors.next_check_at`: exactly one
 *   caller — whichever runner, even two at once during a shard hand-off — moves it from
 *   the slot it saw to the next one, and only that caller runs the slot's check. Claims
 *   due together share one statement (`GroupCommit`);
 * - `record` writes one attempt in one transaction: the heartbeat (unique per monitor,
 *   slot and attempt, so a replay is a no-op), the monitor's new status, the elapsed
 *   interval in the hourly uptime rollup, and the `heartbeat` / `monitor.status` domain
 *   events. Attempts are group-committed (`GroupCommit`, `RecordBatch.ts`): no timer, one
 *   writer takes whatever queued while its previous transaction ran (1 to 200 attempts),
 *   so a lone attempt is written at once and a busy runner pays four round trips per
 *   batch instead of four per check.
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

export type { AttemptInput, RecordOutcome } from "./RecordBatch.ts"

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

/** Claims or attempts per statement at most. */
const MAX_BATCH = 200

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repository = yield* MonitorRepository
  const events = yield* Events
  const { region } = yield* AppConfig

  const loadSchedule = repository.schedule

  // Claims due together (alarms fire in bursts on a busy runner) go in one statement.
  const claimOne = yield* GroupCommit.make({
    key: (
      claim: { readonly id: string; readonly expected: number; readonly next: number; readonly frequency: number }
    ) => claim.id,
    write: (claims) =>
      Effect.map(repository.claimMany(claims), (rows) => {
        const byId = new Map(rows.map((row) => [row.id, row]))
        return claims.map((claim) => Option.fromUndefinedOr(byId.get(claim.id)))
      }),
    maxBatch: MAX_BATCH
  })

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
      claimOne({
        id: options.monitorId,
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

  // Attempts finished together are written in one transaction (`RecordBatch.ts`).
  const record = yield* GroupCommit.make({
    key: (input: AttemptInput) => input.monitorId,
    write: (inputs) => sql.withTransaction(recordBatch(sql, repository, region, inputs)),
    afterWrite: (outcomes) =>
      outcomes.some((outcome) => outcome._tag === "Recorded") ? events.notifyCommitted : Effect.void,
    maxBatch: MAX_BATCH
  })

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
