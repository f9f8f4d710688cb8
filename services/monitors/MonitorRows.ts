import { Schema } from "effect"
import {
  CheckType,
  DnsRecordType,
  HttpMethod,
  MonitorAssertion,
  MonitorStatus
} from "../../schemas/monitors/Monitors.ts"

/**
 * The shapes `MonitorRepository` reads from the `monitors` table, as Schemas: every row
 * is decoded with one of these before it leaves the repository.
 */

/** A stored monitor, in full. `frequency`, `timeout` and `retryInterval` are seconds. */
export const MonitorRecord = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  name: Schema.String,
  url: Schema.String,
  method: HttpMethod,
  checkType: CheckType,
  frequency: Schema.Int,
  timeout: Schema.Int,
  expectedCode: Schema.Int,
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.NullOr(Schema.String),
  assertions: Schema.NullOr(Schema.Array(MonitorAssertion)),
  dnsRecordType: Schema.NullOr(DnsRecordType),
  expectedValue: Schema.NullOr(Schema.String),
  degradedThresholdMs: Schema.NullOr(Schema.Int),
  retries: Schema.Int,
  retryInterval: Schema.Int,
  alertEmails: Schema.Array(Schema.String),
  active: Schema.Boolean,
  status: MonitorStatus,
  consecutiveFailures: Schema.Int,
  /** The next slot to check (claimed by compare-and-swap by the scheduler). */
  nextCheckAt: Schema.Date,
  lastCheckedAt: Schema.NullOr(Schema.Date),
  /** Start of the interval not yet accounted in the uptime rollups (see `Uptime.ts`). */
  statusSince: Schema.Date,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
})
export type MonitorRecord = typeof MonitorRecord.Type

/** What the scheduler needs between checks (`nextCheckAt` in epoch ms). */
export const MonitorSchedule = Schema.Struct({
  id: Schema.String,
  active: Schema.Boolean,
  nextCheckAt: Schema.Number,
  frequency: Schema.Int,
  retryInterval: Schema.Int,
  status: MonitorStatus
})
export type MonitorSchedule = typeof MonitorSchedule.Type

/** A schedule for the sweep, with the shard recorded for it (null: not known for this shard count). */
export const ShardedSchedule = Schema.Struct({ ...MonitorSchedule.fields, shard: Schema.NullOr(Schema.Int) })
export type ShardedSchedule = typeof ShardedSchedule.Type

/** The state a check result is applied to, read under the row lock (times in epoch ms). */
export const CheckState = Schema.Struct({
  orgId: Schema.String,
  name: Schema.String,
  active: Schema.Boolean,
  status: MonitorStatus,
  consecutiveFailures: Schema.Int,
  retries: Schema.Int,
  degradedThresholdMs: Schema.NullOr(Schema.Int),
  lastCheckedAt: Schema.NullOr(Schema.Number),
  statusSince: Schema.Number
})
export type CheckState = typeof CheckState.Type

/** An active monitor as the public status summary shows it. */
export const MonitorHealth = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: MonitorStatus,
  lastCheckedAt: Schema.NullOr(Schema.Date)
})
export type MonitorHealth = typeof MonitorHealth.Type

/** A monitor's open uptime interval: its status since `statusSince`. */
export const StatusSpan = Schema.Struct({ id: Schema.String, status: MonitorStatus, statusSince: Schema.Date })
export type StatusSpan = typeof StatusSpan.Type

/** What an alert email names: the monitor, its organization and its extra recipients. */
export const AlertSubject = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  name: Schema.String,
  url: Schema.String,
  slug: Schema.String,
  orgName: Schema.String,
  alertEmails: Schema.Array(Schema.String)
})
export type AlertSubject = typeof AlertSubject.Type

/** The stored fields a create or update writes (the scheduling columns included). */
export type MonitorWrite = Omit<MonitorRecord, "id" | "orgId" | "lastCheckedAt" | "createdAt">
