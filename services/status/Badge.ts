import { makeBadge } from "badge-maker"
import type { BadgeStyle } from "../../schemas/status/Status.ts"

/**
 * The uptime badge (GUIDE §6), drawn by shields.io's own renderer (`badge-maker`): the
 * four styles' geometry, text widths from its Verdana tables (11px; 10px for
 * `for-the-badge`, which is uppercase), and every text XML-escaped.
 */

export const BADGE_DEFAULTS = { style: "flat", label: "uptime", period: "30d" } as const

/** No data, unknown monitor. */
export const GREY = "#9f9f9f"

/** Colour by uptime threshold (GUIDE §6); `null` is "no data". */
export const badgeColor = (uptime: number | null): string =>
  uptime === null
    ? GREY
    : uptime >= 99.9
    ? "#4c1"
    : uptime >= 99
    ? "#97ca00"
    : uptime >= 95
    ? "#dfb317"
    : uptime >= 90
    ? "#fe7d37"
    : "#e05d44"

/** `99.95%`: at most two decimals, floored so any downtime never reads 100%. */
export const formatUptime = (uptime: number): string => `${Math.floor(uptime * 100 + 1e-6) / 100}%`

export interface BadgeInput {
  readonly label: string
  readonly message: string
  readonly color: string
  readonly style: BadgeStyle
}

export const renderBadge = (input: BadgeInput): string =>
  makeBadge({ label: input.label, message: input.message, color: input.color, style: input.style })

/** The badge of a monitor's uptime over a period; `null` uptime reads "no data". */
export const uptimeBadge = (uptime: number | null, label: string, style: BadgeStyle): string =>
  renderBadge({ label, message: uptime === null ? "no data" : formatUptime(uptime), color: badgeColor(uptime), style })

/** The grey badge served with a 404 for an unknown organization or monitor. */
export const notFoundBadge = (label: string, style: BadgeStyle): string =>
  renderBadge({ label, message: "not found", color: GREY, style })
