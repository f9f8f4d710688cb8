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

/** Pack data on side-band channel 1: a ref name cannot hold the control byte, so ls-refs never matches. */
const packMarker = Buffer.from("\u0001PACK", "latin1")

/**
 * An upload-pack response, counted: bytes always, and one fetch when it carried a pack (a
 * protocol v2 clone makes two requests, `ls-refs` and `fetch`; only the second sends a pack).
 */
export const countedFetchStream = <E, R>(stream: Stream.Stream<Uint8Array, E, R>, orgId: string) => {
  let bytes = 0
  let sawPack = false
  let tail: Uint8Array = new Uint8Array(0)
  return Stream.ensuring(
    Stream.map(stream, (chunk) => {
      bytes += chunk.length
      if (!sawPack) {
        const joined = Buffer.concat([tail, chunk])
        sawPack = joined.indexOf(packMarker) >= 0
        tail = joined.subarray(Math.max(0, joined.length - packMarker.length + 1))
      }
      return chunk
    }),
    Effect.suspend(() =>
      Effect.andThen(
        sawPack ? count(gitOperations, { operation: "fetch" }, { org: orgId }) : Effect.void,
        count(gitBytes, { direction: "sent" }, { org: orgId, by: bytes })
      )
    )
  )
}
