import { Context, Effect, Exit, Layer, Schema } from "effect"
import * as SchemaIssue from "effect/SchemaIssue"
import { MAX_BATCH, ObserveEvent } from "../../schemas/observe/Observe.ts"
import { count, ingestEvents } from "../metrics/Metrics.ts"
import { sha256Hex } from "../platform/Crypto.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeEventFast, isoTimestampMillis } from "./FastEventDecoder.ts"
import { culprit, fingerprint, issueTitle } from "./Fingerprint.ts"
import { SourceMaps } from "./SourceMaps.ts"

/**
 * From request bodies to the rows the ingest entity commits: per-entry validation (a
 * batch keeps its valid entries and reports the others by index), symbolication, then
 * fingerprinting. CPU work done by the runner that took the request, so the
 * organization's entity only samples and writes.
 */

/** An event ready for the group commit; plain data so it can travel to another runner. */
export const PreparedEvent = Schema.Struct({
  id: Schema.String,
  eventId: Schema.NullOr(Schema.String),
  level: Schema.String,
  message: Schema.String,
  /** Event time (Unix ms): the client's, else the receive time. */
  timestamp: Schema.Number,
  receivedAt: Schema.Number,
  release: Schema.NullOr(Schema.String),
  environment: Schema.NullOr(Schema.String),
  userKey: Schema.NullOr(Schema.String),
  /** Null for spans. */
  fingerprint: Schema.NullOr(Schema.String),
  title: Schema.String,
  type: Schema.NullOr(Schema.String),
  culprit: Schema.NullOr(Schema.String),
  /** The validated (and symbolicated) event as JSON text, without the exception's frames. */
  data: Schema.String,
  /** The exception's frames as JSON text, and their hash (stored once per distinct stack). */
  stack: Schema.NullOr(Schema.String),
  stackId: Schema.NullOr(Schema.String),
  span: Schema.NullOr(Schema.Struct({
    traceId: Schema.String,
    spanId: Schema.String,
    parentId: Schema.NullOr(Schema.String),
    name: Schema.String,
    durationMs: Schema.Number,
    status: Schema.Literals(["ok", "error"])
  }))
})
export type PreparedEvent = typeof PreparedEvent.Type

export interface Rejection {
  readonly index: number
  readonly error: string
}

export interface Prepared {
  readonly events: ReadonlyArray<PreparedEvent>
  readonly rejected: ReadonlyArray<Rejection>
  /** True when the body was a single event (not `{events: [...]}`). */
  readonly single: boolean
}

/** The body is neither an event nor a batch: the whole request is refused (400). */
export class InvalidBody extends Schema.TaggedError<InvalidBody>()("InvalidBody", { message: Schema.String }) {}

const decodeEvent = Schema.decodeUnknownExit(ObserveEvent)
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const describe = (issue: SchemaIssue.Issue): string =>
  formatIssues(issue).issues.map((entry) => {
    const path = (entry.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
    return path.length === 0 ? entry.message : `${path.join(".")}: ${entry.message}`
  }).join("; ")

/** A stable key for counting distinct users: id, else e-mail, else username, else IP. */
const userKey = (user: ObserveEvent["user"]): string | null =>
  user?.id ?? user?.email ?? user?.username ?? user?.ip_address ?? null

const toMillis = (timestamp: ObserveEvent["timestamp"], fallback: number): number => {
  if (timestamp === undefined) return fallback
  if (typeof timestamp === "number") return timestamp
  return isoTimestampMillis(timestamp) ?? fallback
}

/** What an exception's type and frames alone decide: computed once per distinct stack. */
interface StackFacts {
  readonly stackId: string
  readonly fingerprint: string
  readonly culprit: string | null
}

/** Distinct (type, stack) pairs remembered per runner; past this the memory starts over. */
const maxRememberedStacks = 10_000

export class EventPreparation extends Context.Service<EventPreparation, {
  /** Splits and validates a parsed JSON body (single event or `{events}`) received at `receivedAt`. */
  prepare(orgId: string, body: unknown, receivedAt: number): Effect.Effect<Prepared, InvalidBody>
  /** Validates and prepares already-split events (Sentry items); invalid ones are rejected by index. */
  prepareEvents(
    orgId: string,
    entries: ReadonlyArray<unknown>,
    receivedAt: number
  ): Effect.Effect<{ readonly events: ReadonlyArray<PreparedEvent>; readonly rejected: ReadonlyArray<Rejection> }>
}>()("canopy/observe/EventPreparation") {
  static readonly layer = Layer.effect(
    EventPreparation,
    Effect.gen(function*() {
      const sourceMaps = yield* SourceMaps

      // type + "\u0000" + frames JSON → facts. Events of one bug repeat their stack, so the
      // fingerprint (filename normalisation, SHA-256) and the stack's hash are computed once.
      const stacks = new Map<string, StackFacts>()
      const factsOf = (event: ObserveEvent, stack: string): StackFacts => {
        // A custom fingerprint depends on more than the stack: not remembered.
        if (event.fingerprint !== undefined) {
          return { stackId: sha256Hex(stack).slice(0, 32), fingerprint: fingerprint(event), culprit: culprit(event) }
        }
        const key = `${event.exception?.type ?? ""}\u0000${stack}`
        let facts = stacks.get(key)
        if (facts === undefined) {
          facts = { stackId: sha256Hex(stack).slice(0, 32), fingerprint: fingerprint(event), culprit: culprit(event) }
          if (stacks.size >= maxRememberedStacks) stacks.clear()
          stacks.set(key, facts)
        }
        return facts
      }

      /** The row of a validated (and symbolicated) event: plain synchronous work. */
      const toPrepared = (event: ObserveEvent, receivedAt: number): PreparedEvent => {
        const isSpan = event.level === "span"
        const stackFrames = event.exception?.stacktrace?.frames
        const stack = stackFrames === undefined || stackFrames.length === 0 ? null : JSON.stringify(stackFrames)
        const facts = stack === null || isSpan ? null : factsOf(event, stack)
        const withoutFrames = stack === null ? event : {
          ...event,
          exception: { type: event.exception?.type, value: event.exception?.value }
        }
        const span = event.span
        const message = event.message ?? span?.name ?? ""
        return {
          id: makeId("evt"),
          eventId: event.event_id ?? null,
          level: event.level ?? (event.exception === undefined ? "info" : "error"),
          message,
          timestamp: toMillis(event.timestamp, receivedAt),
          receivedAt,
          release: event.release ?? null,
          environment: event.environment ?? null,
          userKey: userKey(event.user),
          fingerprint: isSpan ? null : facts?.fingerprint ?? fingerprint(event),
          title: isSpan ? message : issueTitle(event) || message,
          type: event.exception?.type ?? null,
          culprit: isSpan ? null : facts === null ? culprit(event) : facts.culprit,
          data: JSON.stringify(withoutFrames),
          stack,
          stackId: stack === null ? null : facts?.stackId ?? sha256Hex(stack).slice(0, 32),
          span: isSpan && span !== undefined
            ? { ...span, parentId: span.parentId ?? null }
            : null
        }
      }

      /** The event with its frames mapped through the release's source maps (as it is without a match). */
      const symbolicated = (orgId: string, input: ObserveEvent) =>
        Effect.map(
          sourceMaps.symbolicate(orgId, input.release, input.exception?.stacktrace?.frames ?? []),
          (frames): ObserveEvent =>
            // Without a matching map the frames come back as they were: no copy.
            frames === input.exception?.stacktrace?.frames || input.exception === undefined
              ? input
              : { ...input, exception: { ...input.exception, stacktrace: { frames } } }
        )

      const hasFrames = (event: ObserveEvent) => (event.exception?.stacktrace?.frames.length ?? 0) > 0

      /** The hand-checked fast path first; the Schema decides (and words the error) otherwise. */
      const decode = (raw: unknown): { readonly event: ObserveEvent } | { readonly error: string } => {
        const fast = decodeEventFast(raw)
        if (fast !== undefined) return { event: fast }
        const exit = decodeEvent(raw)
        if (Exit.isSuccess(exit)) return { event: exit.value }
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        return { error: failure === undefined ? "invalid event" : describe(failure.error.issue) }
      }

      const validate = (raw: unknown): { readonly event: ObserveEvent } | { readonly error: string } => {
        const decoded = decode(raw)
        if ("error" in decoded) return decoded
        const event = decoded.event
        if (event.level === "span" && event.span === undefined) return { error: "span: required when level is span" }
        if (event.level !== "span" && event.message === undefined) return { error: "message: is required" }
        return { event }
      }

      /**
       * Validation and rows in plain loops; the source maps are asked once per distinct
       * release of the request, and only events of a release with maps take the effectful
       * symbolication (per-event effects cost more than the rest of the preparation).
       */
      const prepareEvents = (orgId: string, entries: ReadonlyArray<unknown>, receivedAt: number) =>
        Effect.suspend(() => {
          const valid: Array<ObserveEvent> = []
          const rejected: Array<Rejection> = []
          const releases = new Set<string>()
          for (let index = 0; index < entries.length; index++) {
            const result = validate(entries[index])
            if ("error" in result) {
              rejected.push({ index, error: result.error })
              continue
            }
            valid.push(result.event)
            if (result.event.release !== undefined && hasFrames(result.event)) releases.add(result.event.release)
          }
          const rows = (events: ReadonlyArray<ObserveEvent>) => {
            const prepared: Array<PreparedEvent> = []
            for (const event of events) prepared.push(toPrepared(event, receivedAt))
            return { events: prepared, rejected }
          }
          const counted = rejected.length === 0
            ? Effect.void
            : count(ingestEvents, { outcome: "dropped", reason: "invalid" }, { org: orgId, by: rejected.length })
          if (releases.size === 0) return Effect.as(counted, rows(valid))
          return Effect.andThen(
            counted,
            Effect.flatMap(
              Effect.filter(releases, (release) => sourceMaps.hasMaps(orgId, release)),
              (withMaps) => {
                if (withMaps.length === 0) return Effect.succeed(rows(valid))
                const mapped = new Set(withMaps)
                return Effect.map(
                  Effect.forEach(
                    valid,
                    (event) =>
                      event.release !== undefined && mapped.has(event.release) && hasFrames(event)
                        ? symbolicated(orgId, event)
                        : Effect.succeed(event)
                  ),
                  rows
                )
              }
            )
          )
        })

      const prepare = Effect.fnUntraced(function*(orgId: string, body: unknown, receivedAt: number) {
        if (typeof body !== "object" || body === null || Array.isArray(body)) {
          return yield* new InvalidBody({ message: "The body must be an event object or {\"events\": [...]}" })
        }
        const batch = (body as { readonly events?: unknown }).events
        if (batch === undefined) {
          const { events, rejected } = yield* prepareEvents(orgId, [body], receivedAt)
          if (rejected.length > 0) return yield* new InvalidBody({ message: `Invalid event: ${rejected[0].error}` })
          return { events, rejected, single: true }
        }
        if (!Array.isArray(batch)) return yield* new InvalidBody({ message: "events: must be an array" })
        if (batch.length === 0) return yield* new InvalidBody({ message: "events: must not be empty" })
        if (batch.length > MAX_BATCH) {
          return yield* new InvalidBody({ message: `events: at most ${MAX_BATCH} events per batch` })
        }
        const { events, rejected } = yield* prepareEvents(orgId, batch, receivedAt)
        return { events, rejected, single: false }
      })

      return EventPreparation.of({ prepare, prepareEvents })
    })
  )
}
