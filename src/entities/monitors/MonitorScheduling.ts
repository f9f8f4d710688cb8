import { Layer } from "effect"
import { HeartbeatRetentionCron } from "./HeartbeatRetentionCron.ts"
import { MonitorAlarms } from "./MonitorAlarms.ts"
import { MonitorChangeListener } from "./MonitorChangeListener.ts"
import { MonitorEntityLayer } from "./MonitorEntity.ts"
import { type MonitorSchedulingOptions, MonitorSweeper } from "./MonitorSweeper.ts"

/**
 * One entity per monitor, owning its schedule (GUIDE §1, §6).
 *
 * The entity decides everything about its checks: when the next slot is, claiming it,
 * running the check, retrying an unconfirmed failure after `retryInterval`, recording
 * each attempt (one transaction, shared with the attempts that finish at the same time:
 * `CheckRecorder.record`) and rescheduling when the frequency changes. Everything durable — the next slot, the status, the consecutive
 * failures — lives in the `monitors` row, so nothing is lost with the entity.
 *
 * Between checks the entity does not stay resident: it leaves an alarm (its next slot,
 * or its next retry) with its runner's `MonitorAlarms` and passivates. An alarm is a
 * heap entry of a few dozen bytes, where a resident entity with a sleeping fiber costs
 * about 30 KB (measured): 10,000 monitors would need ~300 MB of heap for sleeping alone.
 * One fiber per runner sleeps (Effect `Clock`, so `TestClock` drives it) until the
 * earliest alarm and sends it to the entity (`Check` / `Retry`), which is re-activated
 * for the check and passivated again `maxIdleTime` after it.
 *
 * Exactly once per slot: `Check` claims the slot by compare-and-swap on
 * `monitors.next_check_at` (`CheckRecorder.claim`); only the caller whose update matched
 * runs the check. Two runners — during a shard hand-off both may act for a monitor for
 * a moment, a stale alarm may fire — cannot both win. Heartbeats are also unique per
 * (monitor, slot, attempt), so even a replayed attempt writes nothing.
 *
 * Late slots: a slot missed by a whole interval or more (downtime) is not replayed as a
 * burst; the entity checks once, at once, for the latest slot of the grid, and goes on.
 *
 * Arming alarms: the entity re-arms itself after every claim and attempt; `Wake` and
 * `Reload` (sent on `monitor.changed` events) re-read the row (start, stop, or
 * reschedule after a frequency change); and on every runner a sweep (`MonitorSweeper`)
 * arms, every `sweepInterval` (every second for the first ten seconds after start), the
 * active monitors whose shard this runner holds and which have no alarm here (or one for
 * another slot than the row's) — after a restart, after shards move to this runner, and
 * as a safety net. So after a restart, checks resume as soon as the runner holds its
 * shards (about a second), whatever happened meanwhile. An alarm whose monitor is no
 * longer hosted here is dropped when it fires.
 *
 * Why not the cluster's durable timers (persisted messages whose payload implements
 * `DeliverAt`): measured with `bench:monitors`, they deliver only at the storage poll (up to
 * a poll interval late), write about six rows in the cluster's message tables per slot and
 * never delete them, and checked far fewer slots on the same machine (docs/decisions.md,
 * "Monitor timers"). Durability comes from the `monitors` row, which the sweep re-arms from.
 *
 * Raw heartbeats older than 90 days are pruned daily by a cluster cron (one runner).
 */

/** The monitor entity, its alarms, the sweep, the change consumer and retention. */
export const MonitorSchedulingLive = (options?: MonitorSchedulingOptions) =>
  Layer.mergeAll(MonitorEntityLayer, MonitorSweeper(options), MonitorChangeListener, HeartbeatRetentionCron).pipe(
    Layer.provideMerge(MonitorAlarms.layer())
  )
