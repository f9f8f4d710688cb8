import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

export const EventQuota = Schema.Struct({
  start: Schema.Number,
  total: Schema.Number,
  kept: Schema.Number,
  previousTotal: Schema.Number
})

/**
 * `PreparedEvent`s as one opaque array: checked only for being an array, and its own JSON
 * encoding (the events are plain JSON data). `Schema.Array(Schema.Unknown)` visited every
 * event on construction, on encoding (walking each event's tree to prove it is JSON) and on
 * decoding, also for local calls (the cluster simulates remote serialization).
 */
const PreparedEvents = Schema.declare(
  (input: unknown): input is ReadonlyArray<unknown> => Array.isArray(input),
  { toCodecJson: () => undefined }
)

/** Samples and durably writes a request's prepared events; answers after the commit. */
export const Ingest = Rpc.make("Ingest", {
  payload: {
    /** The plan's events per minute; null = unlimited. */
    limit: Schema.NullOr(Schema.Int),
    /**
     * `PreparedEvent`s, validated by the runner that prepared them and passed through as
     * plain data: re-encoding thousands of fields per request against their schema cost
     * more than the rest of the entity call.
     */
    events: PreparedEvents
  },
  success: EventQuota
})

export const IngestStream = Entity.make("IngestStream", [Ingest])
