import { Schema } from "effect"

export const OverallStatus = Schema.Literals(["operational", "degraded", "partial_outage", "major_outage"])
export type OverallStatus = typeof OverallStatus.Type

/** The public organization status summary (spec "Organization status summary"). */
export const StatusSummary = Schema.Struct({
  overallStatus: OverallStatus,
  monitors: Schema.Struct({
    total: Schema.Int,
    operational: Schema.Int,
    degraded: Schema.Int,
    down: Schema.Int
  }),
  activeIncidents: Schema.Int,
  uptime: Schema.Struct({ day: Schema.Number, week: Schema.Number, month: Schema.Number }),
  components: Schema.Array(Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    status: OverallStatus,
    monitors: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, status: Schema.String }))
  }))
})
export type StatusSummary = typeof StatusSummary.Type

/** Status of one component (GUIDE §6): the same values as the overall status. */
export const ComponentStatus = OverallStatus
export type ComponentStatus = OverallStatus

/** Widget data (spec "Widget data"): `uptime` is the 30-day figure; CORS enabled. */
export const Widget = Schema.Struct({
  status: OverallStatus,
  uptime: Schema.Number,
  monitors: Schema.Int,
  incidents: Schema.Int,
  /** The newest heartbeat or incident change (ISO 8601). */
  lastUpdated: Schema.String
})
export type Widget = typeof Widget.Type

export const BadgeStyle = Schema.Literals(["flat", "flat-square", "plastic", "for-the-badge"])
export type BadgeStyle = typeof BadgeStyle.Type

export const BadgePeriod = Schema.Literals(["24h", "7d", "30d"])
export type BadgePeriod = typeof BadgePeriod.Type

/** `GET /api/v1/badge/{slug}/{monitorId}` query (GUIDE §6); an unknown style is a 400. */
export const BadgeQuery = Schema.Struct({
  style: Schema.optional(BadgeStyle),
  label: Schema.optional(Schema.String.check(Schema.isMaxLength(100))),
  period: Schema.optional(BadgePeriod)
})
export type BadgeQuery = typeof BadgeQuery.Type
