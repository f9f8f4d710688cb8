import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import { organizationNameById } from "../tenancy/Tenancy.ts"
import type {
  AlertSubject,
  CheckState,
  MonitorHealth,
  MonitorRecord,
  MonitorSchedule,
  MonitorWrite,
  ShardedSchedule,
  StatusSpan
} from "./MonitorRows.ts"
import * as Rows from "./MonitorRows.ts"

/** What `healthOfOrg` answers, for the status summary. */
export type { MonitorHealth }

/*
 * The one owner of the `monitors` table (its statements are in `MonitorRows.ts`). Other
 * services — the API's `Monitors`, the scheduler's `CheckRecorder`, uptime, incidents,
 * components, the status summary and alerts — ask this service instead of querying the table.
 */

const none = () => new Set<string>()

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return MonitorRepository.of({
    find: (id, options) => Rows.findMonitor(sql, id, options?.orgId ?? null, options?.forUpdate === true),
    listOfOrg: (orgId, options) =>
      Effect.gen(function*() {
        const active = options.active ?? null
        const rows = yield* Rows.monitorPage(sql, { orgId, active, limit: options.limit, offset: options.offset })
        // An offset past the end returns no row to read the window count from.
        const count = rows.length > 0
          ? rows[0].total
          : options.offset > 0
          ? yield* Rows.countMonitors(sql, orgId, active)
          : 0
        return { records: rows.map(({ total: _, ...record }) => record), count }
      }),
    insert: (id, orgId, values) => Rows.insertMonitor(sql, id, orgId, values),
    update: (id, values) => Rows.updateMonitor(sql, id, values),
    schedule: (id) => Rows.findSchedule(sql, id),
    claimMany: (claims) => claims.length === 0 ? Effect.succeed([]) : Rows.claimSlots(sql, claims),
    reschedule: (options) => Rows.rescheduleSlot(sql, options.monitorId, options.expected, options.next),
    findActive: (id) => Rows.findActiveMonitor(sql, id),
    lockCheckStates: (ids) => ids.length === 0 ? Effect.succeed([]) : Rows.lockCheckStates(sql, ids),
    applyChecks: (checks, monitorIds) => Rows.applyChecks(sql, checks, monitorIds),
    shardSchedules: (shards, shardCount) => Rows.shardSchedules(sql, shards, shardCount),
    assignShards: (assigned, shardCount) =>
      assigned.length === 0 ? Effect.void : Rows.assignShards(sql, assigned, shardCount),
    ownedIds: (orgId, ids) => ids.length === 0 ? Effect.succeed(none()) : Rows.ownedIds(sql, orgId, [...new Set(ids)]),
    healthOfOrg: (orgId) => Rows.healthOfOrg(sql, orgId),
    statusSpans: (ids) => ids.length === 0 ? Effect.succeed([]) : Rows.statusSpans(sql, ids),
    idPage: (after, limit) => Rows.idPage(sql, after, limit),
    activeDown: (ids) => ids.length === 0 ? Effect.succeed(none()) : Rows.activeDown(sql, ids),
    existingIds: (ids) => ids.length === 0 ? Effect.succeed(none()) : Rows.existingIds(sql, ids),
    alertSubject: (id) =>
      Effect.gen(function*() {
        const monitor = yield* Rows.alertMonitor(sql, id)
        if (Option.isNone(monitor)) return Option.none()
        // The organization's slug and name come from tenancy.
        const org = yield* organizationNameById(sql, monitor.value.orgId)
        return Option.map(org, (org): AlertSubject => ({ ...monitor.value, slug: org.slug, orgName: org.name }))
      })
  })
})

export class MonitorRepository extends Context.Service<MonitorRepository, {
  /** One monitor; with `orgId`, only if it belongs to that organization; `forUpdate` locks the row. */
  find(
    id: string,
    options?: { readonly orgId?: string | undefined; readonly forUpdate?: boolean | undefined }
  ): Effect.Effect<Option.Option<MonitorRecord>, SqlError>
  /** A page of an organization's monitors, newest first, and the total matching. */
  listOfOrg(orgId: string, options: {
    readonly active?: boolean | undefined
    readonly limit: number
    readonly offset: number
  }): Effect.Effect<{ readonly records: ReadonlyArray<MonitorRecord>; readonly count: number }, SqlError>
  insert(id: string, orgId: string, values: MonitorWrite): Effect.Effect<MonitorRecord, SqlError>
  update(id: string, values: MonitorWrite): Effect.Effect<MonitorRecord, SqlError>
  /** The scheduler's view of one monitor. */
  schedule(id: string): Effect.Effect<Option.Option<MonitorSchedule>, SqlError>
  /**
   * Takes slots by compare-and-swap, many monitors (one slot each) at once: moves each
   * `next_check_at` from `expected` (what the caller saw) to `next` if the frequency is still
   * `frequency` and the monitor active. Exactly one caller wins a slot; the result holds the
   * monitors whose slot this call took, as they are now.
   */
  claimMany(
    claims: ReadonlyArray<{
      readonly id: string
      readonly expected: number
      readonly next: number
      readonly frequency: number
    }>
  ): Effect.Effect<ReadonlyArray<MonitorRecord>, SqlError>
  /** Moves `next_check_at` from `expected` to `next`; false if it moved meanwhile. */
  reschedule(options: {
    readonly monitorId: string
    readonly expected: number
    readonly next: number
  }): Effect.Effect<boolean, SqlError>
  findActive(id: string): Effect.Effect<Option.Option<MonitorRecord>, SqlError>
  /** The state check results apply to, of the monitors that exist, locked in id order until the transaction ends. */
  lockCheckStates(
    ids: ReadonlyArray<string>
  ): Effect.Effect<ReadonlyArray<CheckState & { readonly id: string }>, SqlError>
  /**
   * Writes checks' effects on many monitors (the uptime interval restarts no earlier than
   * `checkedAt`), each if its id is in `monitorIds` (a subquery); a statement to embed.
   */
  applyChecks(checks: ReadonlyArray<Rows.AppliedCheck>, monitorIds: Statement.Fragment): Statement.Statement<unknown>
  /** Active monitors of the given shards, plus those whose shard is not recorded for `shardCount`. */
  shardSchedules(
    shards: ReadonlyArray<number>,
    shardCount: number
  ): Effect.Effect<ReadonlyArray<ShardedSchedule>, SqlError>
  assignShards(
    assigned: ReadonlyArray<{ readonly id: string; readonly shard: number }>,
    shardCount: number
  ): Effect.Effect<void, SqlError>
  /** Which of `ids` are monitors of `orgId` (active or not). */
  ownedIds(orgId: string, ids: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>, SqlError>
  /** An organization's active monitors, oldest first. */
  healthOfOrg(orgId: string): Effect.Effect<ReadonlyArray<MonitorHealth>, SqlError>
  statusSpans(ids: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<StatusSpan>, SqlError>
  /** Monitor ids after `after` in id order (every monitor, for paging jobs). */
  idPage(after: string, limit: number): Effect.Effect<ReadonlyArray<string>, SqlError>
  /** Which of `ids` are active and down. */
  activeDown(ids: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>, SqlError>
  /** Which of `ids` are monitors (of any organization, active or not). */
  existingIds(ids: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>, SqlError>
  alertSubject(id: string): Effect.Effect<Option.Option<AlertSubject>, SqlError>
}>()("canopy/monitors/MonitorRepository") {
  static readonly layer: Layer.Layer<MonitorRepository, never, SqlClient.SqlClient> = Layer.effect(
    MonitorRepository,
    make
  )
}
