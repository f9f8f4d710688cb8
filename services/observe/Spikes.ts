/**
 * Spike detection (GUIDE §7), as pure state kept by an organization's ingest stream: per
 * subject (the organization, or one issue) the error events per minute of the last hour
 * and a bit. A 5-minute count above max(3 × the trailing baseline, a floor) opens a
 * spike; the baseline is the average 5-minute count of the 60 minutes before those 5.
 * One alert per spike: a spike stays open until the count falls back to the threshold,
 * and a subject alerts again only after a cooldown.
 */

export const spikeRule = {
  windowMinutes: 5,
  baselineMinutes: 60,
  factor: 3,
  /** Events per 5 minutes below which nothing is a spike, for the organization and for one issue. */
  floor: { org: 100, issue: 50 },
  cooldownMs: 30 * 60_000
} as const

export interface Spike {
  /** `org`, or the issue's id. */
  readonly subject: string
  readonly count: number
  readonly baseline: number
  readonly threshold: number
}

interface SubjectState {
  readonly minutes: Map<number, number>
  open: boolean
  lastAlertAt: number
}

const keptMinutes = spikeRule.windowMinutes + spikeRule.baselineMinutes
const maxSubjects = 10_000

export class SpikeDetector {
  private readonly subjects = new Map<string, SubjectState>()

  /** Counts `n` error events of `subject` at `nowMillis`. */
  record(subject: string, nowMillis: number, n: number): void {
    const minute = Math.floor(nowMillis / 60_000)
    let state = this.subjects.get(subject)
    if (state === undefined) {
      if (this.subjects.size >= maxSubjects) this.forgetQuiet(minute)
      state = { minutes: new Map(), open: false, lastAlertAt: Number.NEGATIVE_INFINITY }
      this.subjects.set(subject, state)
    }
    state.minutes.set(minute, (state.minutes.get(minute) ?? 0) + n)
  }

  /** The spikes that open now among `subjects` (each alerts once, then after the cooldown). */
  evaluate(subjects: Iterable<string>, nowMillis: number): ReadonlyArray<Spike> {
    const minute = Math.floor(nowMillis / 60_000)
    const spikes: Array<Spike> = []
    for (const subject of subjects) {
      const state = this.subjects.get(subject)
      if (state === undefined) continue
      let count = 0
      let history = 0
      for (const [at, n] of state.minutes) {
        const age = minute - at
        if (age >= keptMinutes) state.minutes.delete(at)
        else if (age < spikeRule.windowMinutes) count += n
        else history += n
      }
      const baseline = history / (spikeRule.baselineMinutes / spikeRule.windowMinutes)
      const floor = subject === "org" ? spikeRule.floor.org : spikeRule.floor.issue
      const threshold = Math.max(spikeRule.factor * baseline, floor)
      if (count <= threshold) {
        state.open = false
      } else if (!state.open && nowMillis - state.lastAlertAt >= spikeRule.cooldownMs) {
        state.open = true
        state.lastAlertAt = nowMillis
        spikes.push({ subject, count, baseline, threshold })
      }
    }
    return spikes
  }

  /** Drops subjects with no event in the kept minutes (bounds memory). */
  private forgetQuiet(minute: number): void {
    for (const [subject, state] of this.subjects) {
      if ([...state.minutes.keys()].every((at) => minute - at >= keptMinutes)) this.subjects.delete(subject)
    }
  }
}
