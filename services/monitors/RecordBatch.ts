import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { HeartbeatEvent, MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import type { NewDomainEvent } from "../events/Events.ts"
import type { CheckResult } from "./checks/Checker.ts"
import { type NewHeartbeat, recordChecks, recordedMonitorIds } from "./HeartbeatRows.ts"
import type { MonitorRepository } from "./MonitorRepository.ts"
import type { CheckState } from "./MonitorRows.ts"
import { type MonitorStatus, type Transition, transition } from "./MonitorState.ts"
import { type AccountIntervalInput, accountIntervalsStatement } from "./Uptime.ts"

/**
 * Check attempts written together: one transaction for any number of monitors (at most one
 * attempt each), so a runner with many checks finishing at once pays one `BEGIN`, one lock
 * read, one write statement and one `COMMIT` for all of them instead of four round trips per
 * check. Per attempt nothing changes from writing it alone: the heartbeat (unique per
 * monitor, slot and attempt, so a replay is a no-op), and, only if it was new, the monitor's
 * new status, the elapsed interval in the hourly uptime rollup and the `heartbeat` /
 * `monitor.status` domain events, all in that transaction.
 */

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

const inactive: RecordOutcome = { _tag: "Skipped", reason: "inactive" }
const duplicate: RecordOutcome = { _tag: "Skipped", reason: "duplicate" }

/** What one attempt writes if its heartbeat is new. */
interface Planned {
  readonly beat: NewHeartbeat
  readonly applied: Transition
  readonly events: ReadonlyArray<NewDomainEvent>
  /** The uptime interval and the monitor's new state; none for a stale result. */
  readonly rollup: AccountIntervalInput | undefined
  readonly state: {
    readonly id: string
    readonly status: MonitorStatus
    readonly consecutiveFailures: number
    readonly checkedAt: Date
  } | undefined
}

/** One attempt against the monitor's locked state (the rule of `MonitorState.ts`). */
const plan = (input: AttemptInput, monitor: CheckState, region: string): Planned => {
  const { result } = input
  const next = transition(monitor, result, monitor.degradedThresholdMs)
  const checkedAt = new Date(input.checkedAt)
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
  const events: Array<NewDomainEvent> = [HeartbeatEvent.make(monitor.orgId, {
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
    events.push(MonitorStatusEvent.make(monitor.orgId, {
      monitorId: input.monitorId,
      name: monitor.name,
      status: applied.status,
      previousStatus: monitor.status,
      timestamp
    }))
  }
  return {
    beat: {
      monitorId: input.monitorId,
      slotAt: new Date(input.slotAt),
      attempt: input.attempt,
      checkedAt,
      status: next.heartbeatStatus,
      responseTimeMs,
      statusCode: result.statusCode ?? null,
      error: result.error ?? null,
      region
    },
    applied,
    events,
    // Uptime (see Uptime.ts): close the open interval [status_since, checkedAt) in the
    // status held so far, count this attempt in its hour, and open the next interval.
    rollup: stale ? undefined : {
      monitorId: input.monitorId,
      from: new Date(monitor.statusSince),
      to: checkedAt,
      status: monitor.status,
      checks: 1,
      failed: next.heartbeatStatus === "down" ? 1 : 0,
      responseTimeMs,
      checkedAt
    },
    state: stale ? undefined : {
      id: input.monitorId,
      status: applied.status,
      consecutiveFailures: applied.consecutiveFailures,
      checkedAt
    }
  }
}

/**
 * Writes the attempts (distinct monitors) in one transaction; their outcomes, in order.
 * Run it inside `sql.withTransaction`.
 */
export const recordBatch = (
  sql: SqlClient.SqlClient,
  repository: MonitorRepository["Service"],
  region: string,
  inputs: ReadonlyArray<AttemptInput>
): Effect.Effect<ReadonlyArray<RecordOutcome>, SqlError> =>
  Effect.gen(function*() {
    const locked = yield* repository.lockCheckStates(inputs.map((input) => input.monitorId))
    const states = new Map(locked.map((row) => [row.id, row]))
    const planned = new Map<string, Planned>()
    for (const input of inputs) {
      const monitor = states.get(input.monitorId)
      if (monitor !== undefined && monitor.active) planned.set(input.monitorId, plan(input, monitor, region))
    }
    if (planned.size === 0) return inputs.map(() => inactive)
    const all = [...planned.values()]
    // Every part is applied only to the monitors whose heartbeat the statement inserted.
    const recorded = recordedMonitorIds(sql)
    const rollups = accountIntervalsStatement(sql, all.flatMap((p) => p.rollup ?? []), recorded)
    const applied = all.flatMap((p) => p.state ?? [])
    const status = applied.length === 0 ? undefined : repository.applyChecks(applied, recorded)
    // The events in the order a lone attempt appends them, each monitor's after the previous one's.
    const events = JSON.stringify(all.flatMap((p) =>
      p.events.map((event) => ({
        monitorId: p.beat.monitorId,
        type: event.type,
        orgId: event.orgId ?? null,
        data: event.data === undefined ? null : event.data
      }))
    ))
    const rows = yield* recordChecks(sql, { beats: all.map((p) => p.beat), rollups, status, events })
    const inserted = new Set(rows.map((row) => row.monitorId))
    return inputs.map((input): RecordOutcome => {
      const p = planned.get(input.monitorId)
      if (p === undefined) return inactive
      if (!inserted.has(input.monitorId)) return duplicate
      return { _tag: "Recorded", transition: p.applied, status: p.applied.status }
    })
  })
