import { Context, Effect, Layer } from "effect"

/**
 * How many entries a request may add to the server's context before Effect copies it.
 * A `Context` keeps additions as overlays on its base map and, at the 8th (the default),
 * copies the base (every service of the app, a few hundred entries) into a new flat map.
 * A request adds about eight before its handler runs: the request, its scope and state,
 * the edge's `RequestState` and log annotations, the router's route and query, and, when
 * a tracer is configured, the server span: that one tipped it over, a copy per request
 * (about 9 µs of `/api/v1/me`'s ~100, at every sampling ratio).
 */
export const requestContextDepth = 16

/**
 * `layer` built on its context with room for `requestContextDepth` additions: the HTTP server
 * hands each request the context it was built with, so requests inherit the room.
 */
export const withRoomForRequests = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.effectContext(
    Effect.updateContext(
      Layer.build(layer),
      (context: Context.Context<R>) => Context.makeUnsafe(context.mapUnsafe, { maxDepth: requestContextDepth })
    )
  ) as Layer.Layer<A, E, R>
