import { Cause, Context, Deferred, Duration, Effect, Layer, Queue, Schedule, Stream } from "effect"
import type { WebSocket } from "ws"
import type { PrivateLiveEventType, PublicLiveEventType } from "../../schemas/live/Live.ts"
import { ComponentChangedEvent } from "../../schemas/status/Components.ts"
import type { StatusSummary as StatusSummaryData } from "../../schemas/status/Status.ts"
import { type DomainEvent, Events } from "../events/Events.ts"
import { StatusSummary } from "../status/StatusSummary.ts"

/**
 * The live status stream's fan-out on one runner (GUIDE §6). One `Events.live`
 * subscription per runner feeds every connected WebSocket, so an event committed by any
 * runner reaches the clients of all of them, and each event is serialised once per
 * organization, not once per client.
 *
 * Per client, the send buffer is bounded: a client whose unsent bytes pass `maxBufferedBytes`
 * is terminated (it reads too slowly; memory stays flat). Every `pingInterval` the hub pings
 * each client and terminates those that did not answer the previous ping.
 */
export interface LiveHubOptions {
  /** Default 30 seconds. */
  readonly pingInterval?: Duration.Input | undefined
  /** Unsent bytes allowed per client before it is dropped. Default 1 MiB. */
  readonly maxBufferedBytes?: number | undefined
}

export interface LiveConnection {
  readonly orgId: string
  readonly slug: string
  /** The authenticated channel: adds `heartbeat` and `observe.spike`. */
  readonly authenticated: boolean
}

const publicTypes: ReadonlySet<string> = new Set<PublicLiveEventType>([
  "monitor.status",
  "incident.created",
  "incident.updated",
  "incident.resolved",
  "incident.deleted"
])
const privateTypes: ReadonlySet<string> = new Set<PrivateLiveEventType>(["heartbeat", "observe.spike", "ci.run"])
/**
 * Events after which the organization's status summary is recomputed (and sent if it
 * changed): the public ones, plus monitors and components being added, changed or removed.
 */
const statusTriggers: ReadonlySet<string> = new Set([...publicTypes, "monitor.changed", ComponentChangedEvent.type])

interface Client extends LiveConnection {
  readonly ws: WebSocket
  alive: boolean
  /** Messages held back until the snapshot is sent; undefined once it is. */
  pending: Array<Buffer> | undefined
}

const OPEN = 1

const encode = (message: unknown) => Buffer.from(JSON.stringify(message))

const make = Effect.fnUntraced(function*(options: LiveHubOptions) {
  const events = yield* Events
  const summaries = yield* StatusSummary
  const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024
  const byOrg = new Map<string, Set<Client>>()
  /** Per organization, a counter of summary-changing events (invalidates cached snapshots). */
  const generations = new Map<string, number>()

  const drop = (client: Client) => client.ws.terminate()

  /** `message` is JSON encoded once per event, not once per client; sent as a text frame. */
  const send = (client: Client, message: Buffer) => {
    if (client.pending !== undefined) {
      client.pending.push(message)
      if (client.pending.length > 1000) drop(client)
      return
    }
    if (client.ws.readyState !== OPEN) return
    if (client.ws.bufferedAmount + message.length > maxBuffered) return drop(client)
    client.ws.send(message, { binary: false })
  }

  const broadcast = (orgId: string, text: Buffer, authenticatedOnly: boolean) => {
    const clients = byOrg.get(orgId)
    if (clients === undefined) return
    for (const client of clients) {
      if (!authenticatedOnly || client.authenticated) send(client, text)
    }
  }

  // --- status summaries: recomputed once per burst of changes per organization ----------
  const dirty = new Map<string, string>()
  const statusWake = yield* Queue.sliding<void>(1)
  /** What a `status` message is about; sent only when this changes. */
  const lastStatus = new Map<string, string>()
  const statusKey = (summary: StatusSummaryData) =>
    JSON.stringify([summary.overallStatus, summary.monitors, summary.activeIncidents, summary.components])
  const sendStatus = (orgId: string, slug: string) =>
    summaries.get(slug).pipe(
      Effect.map((summary) => {
        const key = statusKey(summary)
        if (lastStatus.get(orgId) === key) return
        lastStatus.set(orgId, key)
        broadcast(orgId, encode({ type: "status", data: summary, at: new Date().toISOString() }), false)
      }),
      Effect.catch(() => Effect.void)
    )
  yield* Effect.gen(function*() {
    while (true) {
      yield* Queue.take(statusWake)
      const batch = [...dirty]
      dirty.clear()
      yield* Effect.forEach(batch, ([orgId, slug]) => sendStatus(orgId, slug), { discard: true })
    }
  }).pipe(Effect.forkScoped)

  const onEvent = (event: DomainEvent) => {
    if (event.orgId === null) return
    const clients = byOrg.get(event.orgId)
    if (clients === undefined || clients.size === 0) return
    const isPublic = publicTypes.has(event.type)
    if (isPublic || privateTypes.has(event.type)) {
      const text = encode({ type: event.type, data: event.data, at: event.createdAt.toISOString() })
      broadcast(event.orgId, text, !isPublic)
    }
    if (statusTriggers.has(event.type)) {
      generations.set(event.orgId, (generations.get(event.orgId) ?? 0) + 1)
      snapshots.delete(event.orgId)
      const [first] = clients
      dirty.set(event.orgId, first.slug)
      Queue.offerUnsafe(statusWake, undefined)
    }
  }

  /** After lost events (the runner's subscription lagged): every client gets a fresh snapshot. */
  const resyncAll = Effect.forEach([...byOrg.values()].flatMap((set) => [...set]), (client) => sendSnapshot(client), {
    discard: true,
    concurrency: 4
  })

  yield* events.live.pipe(
    Stream.runForEach((event) => Effect.sync(() => onEvent(event))),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("LiveHub: resynchronising", cause)
        .pipe(Effect.andThen(resyncAll))
    ),
    Effect.forever,
    Effect.forkScoped
  )

  // --- pings -----------------------------------------------------------------------------
  yield* Effect.sync(() => {
    for (const clients of byOrg.values()) {
      for (const client of clients) {
        if (!client.alive) {
          drop(client)
          continue
        }
        client.alive = false
        if (client.ws.readyState === OPEN) client.ws.ping()
      }
    }
  }).pipe(
    Effect.delay(options.pingInterval ?? "30 seconds"),
    Effect.repeat(Schedule.spaced(options.pingInterval ?? "30 seconds")),
    Effect.forkScoped
  )

  // --- snapshots: one summary query per organization for a burst of connections ----------
  // A cached snapshot is dropped by any event that changes the summary (see `onEvent`), and
  // a query that raced such an event is not cached, so no client misses a change.
  const snapshots = new Map<string, {
    readonly generation: number
    readonly at: number
    readonly text: Deferred.Deferred<Buffer, unknown>
  }>()
  const snapshotText = (orgId: string, slug: string): Effect.Effect<Buffer, unknown> =>
    Effect.suspend(() => {
      const generation = generations.get(orgId) ?? 0
      const cached = snapshots.get(orgId)
      // Kept for a few seconds only: uptime figures move even without events.
      if (cached !== undefined && cached.generation === generation && Date.now() - cached.at < 5000) {
        return Deferred.await(cached.text)
      }
      const text = Deferred.makeUnsafe<Buffer, unknown>()
      snapshots.set(orgId, { generation, at: Date.now(), text })
      return summaries.get(slug).pipe(
        Effect.map((summary) => encode({ type: "snapshot", data: summary })),
        Effect.onExit((exit) => {
          if (exit._tag === "Failure" || (generations.get(orgId) ?? 0) !== generation) snapshots.delete(orgId)
          return Deferred.done(text, exit)
        })
      )
    })

  const sendSnapshot = (client: Client) =>
    snapshotText(client.orgId, client.slug).pipe(
      Effect.map((snapshot) => {
        const held = client.pending ?? []
        client.pending = undefined
        send(client, snapshot)
        for (const text of held) send(client, text)
      }),
      Effect.catch(() => Effect.sync(() => client.ws.close(1008, "not found")))
    )

  const detach = (client: Client) => {
    const clients = byOrg.get(client.orgId)
    if (clients === undefined || !clients.delete(client)) return
    if (clients.size === 0) {
      byOrg.delete(client.orgId)
      lastStatus.delete(client.orgId)
      snapshots.delete(client.orgId)
      generations.delete(client.orgId)
    }
  }

  // No fiber per connection: a client is a few fields and two listeners (memory per idle
  // connection is the point of the live benchmark).
  const attach = (ws: WebSocket, connection: LiveConnection): Effect.Effect<void> =>
    Effect.suspend(() => {
      const client: Client = { ...connection, ws, alive: true, pending: [] }
      let clients = byOrg.get(connection.orgId)
      if (clients === undefined) byOrg.set(connection.orgId, clients = new Set())
      clients.add(client)
      ws.on("pong", () => {
        client.alive = true
      })
      // Protocol errors (an oversized or malformed frame) close the socket; `ws` reports them
      // as "error" events, which must be handled or they would crash the process.
      ws.on("error", () => ws.terminate())
      ws.once("close", () => detach(client))
      if (ws.readyState > OPEN) detach(client)
      return sendSnapshot(client)
    })

  const connections = Effect.sync(() => {
    let count = 0
    for (const clients of byOrg.values()) count += clients.size
    return count
  })

  const allClients = () => [...byOrg.values()].flatMap((clients) => [...clients])
  /** Closes every connection with 1012 (service restart), then cuts those that did not answer within a second. */
  const closeAll = Effect.gen(function*() {
    for (const client of allClients()) client.ws.close(1012, "server restarting")
    const deadline = Date.now() + 1000
    while (allClients().length > 0 && Date.now() < deadline) yield* Effect.sleep("20 millis")
    for (const client of allClients()) client.ws.terminate()
  })
  yield* Effect.addFinalizer(() => closeAll)

  return LiveHub.of({ attach, connections, closeAll })
})

export class LiveHub extends Context.Service<LiveHub, {
  /**
   * Adds an open WebSocket: sends the snapshot (the effect ends then), then the
   * organization's events until the socket closes or is dropped.
   */
  readonly attach: (ws: WebSocket, connection: LiveConnection) => Effect.Effect<void>
  /** Clients connected to this runner. */
  readonly connections: Effect.Effect<number>
  /** Closes every connection (shutdown: upgraded sockets would hold up the HTTP server's close). */
  readonly closeAll: Effect.Effect<void>
}>()("canopy/live/LiveHub") {
  static readonly layerWith = (options: LiveHubOptions = {}) => Layer.effect(LiveHub, make(options))
  static readonly layer = LiveHub.layerWith()
}
