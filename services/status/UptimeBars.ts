import type { DailyUptime } from "../monitors/Uptime.ts"

/**
 * The status page's 90 daily bars (GUIDE §6: uptime is the time-weighted share of the
 * window). A day's window is the whole UTC day, today's the part of it gone by, for each
 * monitor that has any data that day: a one-minute outage on a monitor's first day is a
 * minute of a day (99.93%), not one check of seven (85.71%). Time before a monitor's first
 * data of the day counts as not down. Today's bar also shows the row's current status, so
 * an outage that just began is never a green bar beside "Major Outage".
 */

export type DayLevel = "good" | "minor" | "partial" | "major" | "none"

export interface UptimeDay {
  readonly date: string
  /** Percentage, or null without data. */
  readonly uptime: number | null
  readonly level: DayLevel
}

const DAY_MS = 86_400_000

export const levelOf = (uptime: number | null): DayLevel =>
  uptime === null ? "none" : uptime >= 99.9 ? "good" : uptime >= 99 ? "minor" : uptime >= 95 ? "partial" : "major"

const rank: Record<DayLevel, number> = { none: 0, good: 1, minor: 2, partial: 3, major: 4 }

/** The least severe level a row's current status puts on today's bar. */
const statusLevel = (status: string): DayLevel =>
  status === "down" || status === "major_outage"
    ? "major"
    : status === "partial_outage"
    ? "partial"
    : status === "degraded"
    ? "minor"
    : "none"

/** The last `days` UTC dates ending today, oldest first. */
export const dateRange = (now: number, days: number): ReadonlyArray<string> =>
  Array.from({ length: days }, (_, i) => new Date(now - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10))

/** Daily bars and the figure over all of them for a set of monitors (a component sums its monitors' time). */
export const uptimeBars = (
  dates: ReadonlyArray<string>,
  monitorIds: ReadonlyArray<string>,
  daily: ReadonlyMap<string, ReadonlyArray<DailyUptime>>,
  now: number,
  currentStatus: string
): { days: ReadonlyArray<UptimeDay>; uptime: number | null } => {
  const today = new Date(now).toISOString().slice(0, 10)
  const elapsedToday = now - Date.parse(`${today}T00:00:00.000Z`)
  const byDate = new Map<string, { down: number; monitors: number }>()
  for (const id of monitorIds) {
    for (const day of daily.get(id) ?? []) {
      if (day.upMs + day.downMs <= 0) continue
      const sum = byDate.get(day.date) ?? { down: 0, monitors: 0 }
      byDate.set(day.date, { down: sum.down + day.downMs, monitors: sum.monitors + 1 })
    }
  }
  let window = 0
  let down = 0
  const days = dates.map((date): UptimeDay => {
    const sum = byDate.get(date)
    const floor = date === today ? statusLevel(currentStatus) : "none"
    if (sum === undefined) return { date, uptime: null, level: floor }
    const length = (date === today ? Math.max(elapsedToday, 1) : DAY_MS) * sum.monitors
    const dayDown = Math.min(sum.down, length)
    window += length
    down += dayDown
    const uptime = 100 * (1 - dayDown / length)
    const level = levelOf(uptime)
    return { date, uptime, level: rank[floor] > rank[level] ? floor : level }
  })
  return { days, uptime: window === 0 ? null : 100 * (1 - down / window) }
}
