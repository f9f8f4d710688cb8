import { Context, Effect, Layer, Schema } from "effect"
import type { ObserveEvent } from "../../schemas/Observe.ts"
import {
  bodyEntries,
  hasFrames,
  mayHaveMaps,
  notJsonMessage,
  parseBody,
  type PreparedEvent,
  type Rejection,
  toPrepared,
  validate
} from "./EventRows.ts"
import { minWorkerBodyBytes, preparationWorkers } from "./PreparationWorkers.ts"
import { SourceMaps } from "./SourceMaps.ts"

export { PreparedEvent, type Rejection } from "./EventRows.ts"

/**
 * From request bodies to the rows the ingest entity commits: per-entry validation (a
 * batch keeps its valid entries and reports the others by index), symbolication, then
 * fingerprinting. CPU work done by the runner that took the request, so the
 * organization's entity only samples and writes. Larger bodies are parsed and prepared
 * on worker threads (`PreparationWorkers.ts`), with the same code (`EventRows.ts`).
 */

export interface Prepared {
  readonly events: ReadonlyArray<PreparedEvent>
  readonly rejected: ReadonlyArray<Rejection>
  /** True when the body was a single event (not `{events: [...]}`). */
  readonly single: boolean
}

/** The body is neither an event nor a batch: the whole request is refused (400). */
export class InvalidBody extends Schema.TaggedError<InvalidBody>()("InvalidBody", { message: Schema.String }) {}

export class EventPreparation extends Context.Service<EventPreparation, {
  /** Parses and prepares a JSON body (single event or `{events}`, UTF-8 bytes) received at `receivedAt`. */
  prepareBody(orgId: string, bytes: Uint8Array, receivedAt: number): Effect.Effect<Prepared, InvalidBody>
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
      return EventPreparation.of(makePreparation(sourceMaps))
    })
  )
}

/** The service over `sourceMaps` and a pool of workers (tests pass their own pool). */
export const makePreparation = (
  sourceMaps: SourceMaps["Service"],
  workers = preparationWorkers
): EventPreparation["Service"] => {
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
      if (releases.size === 0) return Effect.succeed(rows(valid))
      return Effect.flatMap(
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
    })

  const finish = (prepared: Omit<Prepared, "single">, single: boolean) =>
    single && prepared.rejected.length > 0
      ? Effect.fail(new InvalidBody({ message: `Invalid event: ${prepared.rejected[0].error}` }))
      : Effect.succeed({ events: prepared.events, rejected: prepared.rejected, single })

  const onThisThread = (orgId: string, bytes: Uint8Array, receivedAt: number) =>
    Effect.suspend(() => {
      const parsed = parseBody(bytes)
      if (parsed === undefined) return Effect.fail(new InvalidBody({ message: notJsonMessage }))
      const split = bodyEntries(parsed.body)
      if ("invalid" in split) return Effect.fail(new InvalidBody({ message: split.invalid }))
      return Effect.flatMap(
        prepareEvents(orgId, split.entries, receivedAt),
        (prepared) => finish(prepared, split.single)
      )
    })

  /**
   * Rows a worker prepared, with the events of releases that have source maps prepared
   * again here (the worker cannot read maps): the body is parsed once more for those, as
   * rare as uploaded maps are, and each is symbolicated and turned into its row as
   * `prepareEvents` does.
   */
  const withSourceMaps = (
    orgId: string,
    bytes: Uint8Array,
    rows: ReadonlyArray<PreparedEvent>,
    rejected: ReadonlyArray<Rejection>,
    receivedAt: number
  ): Effect.Effect<ReadonlyArray<PreparedEvent>> => {
    const releases = new Set<string>()
    for (const row of rows) if (mayHaveMaps(row)) releases.add(row.release)
    if (releases.size === 0) return Effect.succeed(rows)
    return Effect.flatMap(Effect.filter(releases, (release) => sourceMaps.hasMaps(orgId, release)), (withMaps) => {
      if (withMaps.length === 0) return Effect.succeed(rows)
      const mapped = new Set(withMaps)
      const split = bodyEntries(parseBody(bytes)?.body)
      if ("invalid" in split) return Effect.succeed(rows)
      // Rows follow the valid entries in order: the entry of row i is the i-th entry not rejected.
      const refused = new Set(rejected.map((rejection) => rejection.index))
      const entryOf: Array<number> = []
      for (let index = 0; index < split.entries.length; index++) if (!refused.has(index)) entryOf.push(index)
      return Effect.forEach(rows, (row, index) => {
        if (!mayHaveMaps(row) || !mapped.has(row.release)) return Effect.succeed(row)
        const again = validate(split.entries[entryOf[index]])
        if ("error" in again) return Effect.succeed(row)
        return Effect.map(symbolicated(orgId, again.event), (event) => toPrepared(event, receivedAt))
      })
    })
  }

  const prepareBody = (orgId: string, bytes: Uint8Array, receivedAt: number) =>
    bytes.length < minWorkerBodyBytes
      ? onThisThread(orgId, bytes, receivedAt)
      : Effect.flatMap(
        Effect.promise(() => {
          // The worker gets a copy (one memcpy, then moved, not cloned): should it die, the
          // job is redone here from these bytes.
          const copy = bytes.slice()
          return workers.run({ bytes: copy, receivedAt }, [copy.buffer])
        }),
        (answer) => {
          if (answer === undefined) return onThisThread(orgId, bytes, receivedAt)
          if ("invalid" in answer) return Effect.fail(new InvalidBody({ message: answer.invalid }))
          return Effect.flatMap(
            withSourceMaps(orgId, bytes, answer.events, answer.rejected, receivedAt),
            (events) => finish({ events, rejected: answer.rejected }, answer.single)
          )
        }
      )

  return { prepareBody, prepareEvents }
}
