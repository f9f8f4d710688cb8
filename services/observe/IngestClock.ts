import { Context } from "effect"

/**
 * The time the ingest entity samples by (Unix milliseconds). Tests replace it to hold a
 * burst inside one minute without waiting for the wall clock.
 */
export const IngestClock = Context.Reference<{ readonly now: () => number }>("canopy/observe/IngestClock", {
  defaultValue: () => ({ now: () => Date.now() })
})
