import { Effect, Stream } from "effect"
import { type Readable, Transform } from "node:stream"
import { count, gitBytes, gitOperations } from "../../../services/metrics/Metrics.ts"

/**
 * Git traffic in the metrics: one `canopy_git_operations_total` per push or fetch served,
 * and the pack bytes each way in `canopy_git_bytes_total`, counted as they stream (a push's
 * request body, a fetch's response body) and added once the stream ends.
 */

/** The push's body, passed through a counter; `done` adds what went through. */
export const countedPushBody = (body: Readable, orgId: string) => {
  let bytes = 0
  // Counted in the transform, not on "data": a listener would start the flow before the reader.
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length
      callback(null, chunk)
    }
  })
  body.on("error", (error) => counted.destroy(error))
  body.pipe(counted)
  const done = Effect.andThen(
    count(gitOperations, { operation: "push" }, { org: orgId }),
    Effect.suspend(() => count(gitBytes, { direction: "received" }, { org: orgId, by: bytes }))
  )
  return { body: counted as Readable, done }
}

/** A fetch's pack stream, counted; the bytes are added when it ends (whatever way). */
export const countedFetchStream = <E, R>(stream: Stream.Stream<Uint8Array, E, R>, orgId: string) => {
  let bytes = 0
  return Stream.ensuring(
    Stream.map(stream, (chunk) => {
      bytes += chunk.length
      return chunk
    }),
    Effect.andThen(
      count(gitOperations, { operation: "fetch" }, { org: orgId }),
      Effect.suspend(() => count(gitBytes, { direction: "sent" }, { org: orgId, by: bytes }))
    )
  )
}
