import { Cause, Duration, Effect, Layer } from "effect"
import { ShardId, Sharding, ShardingConfig } from "effect/cluster"
import { CheckRecorder } from "../../../services/monitors/CheckRecorder.ts"
import { Monitor } from "../../../services/monitors/MonitorProtocol.ts"
import * as RunnerAlarms from "../RunnerAlarms.ts"
import { MonitorAlarms } from "./MonitorAlarms.ts"

const STARTUP_SWEEPS = 10

export interface MonitorSchedulingOptions {
  /** How often each runner arms the active monitors it hosts but has no alarm for. Default 10 s. */
  readonly sweepInterval?: Duration.Input | undefined
  /** The cluster's shards per group (the sweep reads the monitors of the shards it holds). */
  readonly shardsPerGroup?: number | undefined
}

/**
 * Per runner: arms an alarm for each active monitor whose shard this runner holds and
 * which has none here (or one for another slot than its row's) — at start (schedules resume after a restart within a second or
 * two of the shards being acquired), when shards arrive from another runner, for
 * monitors activated without an event, and after any lost alarm. Arming needs no entity
 * activation: the entity is activated when the alarm fires.
 */
export const MonitorSweeper = (options?: MonitorSchedulingOptions) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const recorder = yield* CheckRecorder
    const alarms = yield* MonitorAlarms
    const interval = Duration.fromInputUnsafe(options?.sweepInterval ?? "10 seconds")

    const shardsPerGroup = options?.shardsPerGroup ?? ShardingConfig.defaults.shardsPerGroup
    const shardOf = RunnerAlarms.shardOf(sharding, Monitor)
    const hostedHere = yield* RunnerAlarms.hostedHere(Monitor)
    const group = shardOf("any").group
    const allShards = Array.from({ length: shardsPerGroup }, (_, i) => i + 1)

    const sweep = Effect.gen(function*() {
      // Only the monitors of the shards this runner holds (and new ones, whose shard is
      // recorded here for the next sweeps) are read.
      const held = allShards.filter((id) => sharding.hasShardId(ShardId.make(group, id)))
      const schedules = yield* recorder.activeSchedules(held, shardsPerGroup)
      const unassigned = schedules.filter((schedule) => schedule.shard === null)
      yield* recorder.assignShards(
        unassigned.map((schedule) => ({ id: schedule.id, shard: shardOf(schedule.id).id })),
        shardsPerGroup
      )
      for (const schedule of schedules) {
        const current = alarms.entry(schedule.id)
        // Missing, or a slot alarm for another slot than the row's (left from an earlier
        // stay of the shard on this runner, or a change whose event was missed). That holds
        // for a delivered ("in flight") slot alarm too: a claim re-arms at once, so a
        // delivered alarm whose slot the row has left was claimed elsewhere or lost — say,
        // sent while its shard moved away — and must not block re-arming for IN_FLIGHT_MS.
        const stale = current !== undefined && current.alarm.kind === "slot" &&
          current.alarm.expected !== schedule.nextCheckAt
        if ((current === undefined || stale) && hostedHere(schedule.id)) {
          alarms.set(schedule.id, schedule.nextCheckAt, {
            kind: "slot",
            expected: schedule.nextCheckAt,
            frequency: schedule.frequency
          })
        }
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logWarning("Monitor: sweep failed", cause)
      )
    )

    // Shards are acquired in the background after start: sweep every second at first.
    yield* Effect.gen(function*() {
      for (let i = 0; i < STARTUP_SWEEPS; i++) {
        yield* sweep
        yield* Effect.sleep("1 second")
      }
      while (true) {
        yield* sweep
        yield* Effect.sleep(interval)
      }
    }).pipe(Effect.forkScoped)
  }))
