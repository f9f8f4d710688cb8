import { Effect, Layer, Option, Stream } from "effect"
import { MonitorChangedEvent } from "../../../schemas/monitors/Monitors.ts"
import { Events } from "../../../services/events/Events.ts"
import { Monitor } from "../../../services/monitors/MonitorProtocol.ts"
import { restartOnFailure } from "../../../services/platform/RestartOnFailure.ts"
import * as RunnerAlarms from "../RunnerAlarms.ts"

/**
 * Listens to `monitor.changed` on this runner's live event stream (every runner sees every
 * event) and sends `Reload` to the monitors hosted here, so changes of frequency, target or
 * `active` take effect at the next check. Live, not a durable consumer: a durable consumer
 * is woken by every committed event — one `heartbeat` per check — and would run a
 * transaction each time; the live reader runs anyway. An event missed (before start,
 * during a hand-off, on overflow) changes nothing durable: claims re-read the row, an
 * inactive monitor's claim fails and cancels its alarm, and the sweep arms new ones.
 */
export const MonitorChangeListener = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const makeClient = yield* Monitor.client
  const hostedHere = yield* RunnerAlarms.hostedHere(Monitor)
  const listen = events.live.pipe(
    Stream.runForEach((event) => {
      const changed = MonitorChangedEvent.match(event)
      if (Option.isNone(changed) || !hostedHere(changed.value.monitorId)) return Effect.void
      const monitorId = changed.value.monitorId
      return makeClient(monitorId).Reload(undefined, { discard: true }).pipe(
        Effect.timeout("5 seconds"),
        Effect.ignore
      )
    }),
    restartOnFailure("Monitor: change listener restarting")
  )
  yield* Effect.forkScoped(listen)
}))

/** Raw heartbeats are kept this many days; hourly rollups are kept (uptime does not change). */
