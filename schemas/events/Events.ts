import { Option, Schema } from "effect"

/** A domain event as the outbox stores it (the fields a publisher gives and a consumer reads). */
export interface EventEnvelope {
  readonly type: string
  readonly orgId?: string | null | undefined
  readonly data: unknown
}

/**
 * One domain event type: its name and the Schema of its data, shared by the publisher
 * (`make`) and every consumer (`match`), so both sides agree on the payload.
 */
export interface EventType<A> {
  readonly type: string
  readonly data: Schema.Codec<A, unknown>
  /** The event to publish, in the transaction that caused it. */
  make(orgId: string | null, data: A): { readonly type: string; readonly orgId: string | null; readonly data: unknown }
  /** The decoded data when `event` is of this type and well formed; none otherwise. */
  match(event: EventEnvelope): Option.Option<A>
}

export const eventType = <A>(type: string, data: Schema.Codec<A, any>): EventType<A> => {
  const encode = Schema.encodeSync(data)
  const decode = Schema.decodeUnknownOption(data)
  return {
    type,
    data,
    make: (orgId, value) => ({ type, orgId, data: encode(value) }),
    match: (event) => event.type === type ? decode(event.data) : Option.none()
  }
}
