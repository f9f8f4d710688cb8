import { Cause, Context, Duration, Effect, Layer, Queue, Schedule, Stream } from "effect"
import type { WebSocket } from "ws"
import type { PrivateLiveEventType, PublicLiveEventType } from "../../schemas/Live.ts"
import { type DomainEvent, Events } from "../platform/Events.ts"
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
  "incident.resolved"
])
const privateTypes: ReadonlySet<string> = new Set<PrivateLiveEventType>(["heartbeat", "observe.spike"])
/** Events after which the organization's status summary is sent again. */
const statusTriggers: ReadonlySet<string> = publicTypes

interface Client extends LiveConnection {
  readonly ws: WebSocket
  alive: boolean
  /** Messages held back until the snapshot is sent; undefined once it is. */
  pending: Array<string> | undefined
}

const OPEN = 1

const make = Effect.fnUntraced(function*(options: LiveHubOptions) {
  const events = yield* Events
  const summaries = yield* StatusSummary
  const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024
  const byOrg = new Map<string, Set<Client>>()

  const drop = (client: Client) => client.ws.terminate()

  const send = (client: Client, text: string) => {
    if (client.pending !== undefined) {
      client.pending.push(text)
      if (client.pending.length > 1000) drop(client)
      return
    }
    if (client.ws.readyState !== OPEN) return
    if (client.ws.bufferedAmount + text.length > maxBuffered) return drop(client)
    client.ws.send(text)
  }

  const broadcast = (orgId: string, text: string, authenticatedOnly: boolean) => {
    const clients = byOrg.get(orgId)
    if (clients === undefined) return
    for (const client of clients) {
      if (!authenticatedOnly || client.authenticated) send(client, text)
    }
  }

  // --- status summaries: recomputed once per burst of changes per organization ----------
  const dirty = new Map<string, string>()
  const statusWake = yield* Queue.sliding<void>(1)
  const sendStatus = (orgId: string, slug: string) =>
    summaries.get(slug).pipe(
      Effect.map((summary) =>
        broadcast(orgId, JSON.stringify({ type: "status", data: summary, at: new Date().toISOString() }), false)
      ),
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
      const text = JSON.stringify({ type: event.type, data: event.data, at: event.createdAt.toISOString() })
      broadcast(event.orgId, text, !isPublic)
    }
    if (statusTriggers.has(event.type)) {
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

  const sendSnapshot = (client: Client) =>
    summaries.get(client.slug).pipe(
      Effect.map((summary) => {
        const held = client.pending ?? []
        client.pending = undefined
        send(client, JSON.stringify({ type: "snapshot", data: summary }))
        for (const text of held) send(client, text)
      }),
      Effect.catch(() => Effect.sync(() => client.ws.close(1008, "not found")))
    )

  const serve = (ws: WebSocket, connection: LiveConnection): Effect.Effect<void> =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const client: Client = { ...connection, ws, alive: true, pending: [] }
        ws.on("pong", () => {
          client.alive = true
        })
        let clients = byOrg.get(connection.orgId)
        if (clients === undefined) byOrg.set(connection.orgId, clients = new Set())
        clients.add(client)
        return client
      }),
      (client) =>
        Effect.andThen(
          sendSnapshot(client),
          Effect.callback<void>((resume) => {
            if (ws.readyState > OPEN) return resume(Effect.void)
            ws.once("close", () => resume(Effect.void))
          })
        ),
      (client) =>
        Effect.sync(() => {
          const clients = byOrg.get(client.orgId)
          clients?.delete(client)
          if (clients?.size === 0) byOrg.delete(client.orgId)
          if (ws.readyState < 2) ws.terminate()
        })
    )

  const connections = Effect.sync(() => {
    let count = 0
    for (const clients of byOrg.values()) count += clients.size
    return count
  })

  return LiveHub.of({ serve, connections })
})

export class LiveHub extends Context.Service<LiveHub, {
  /**
   * Streams to an open WebSocket: the snapshot, then the organization's events, until the
   * socket closes (or is dropped); the socket is terminated if the effect is interrupted.
   */
  readonly serve: (ws: WebSocket, connection: LiveConnection) => Effect.Effect<void>
  /** Clients connected to this runner. */
  readonly connections: Effect.Effect<number>
}>()("canopy/live/LiveHub") {
  static readonly layerWith = (options: LiveHubOptions = {}) => Layer.effect(LiveHub, make(options))
  static readonly layer = LiveHub.layerWith()
}
