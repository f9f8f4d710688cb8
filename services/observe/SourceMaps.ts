import { Context, Effect, Layer } from "effect"

/** A stack frame as ingested (Sentry's field names); `raw` is the frame before symbolication. */
export interface Frame {
  readonly filename?: string | undefined
  readonly abs_path?: string | undefined
  readonly function?: string | undefined
  readonly lineno?: number | undefined
  readonly colno?: number | undefined
  readonly in_app?: boolean | undefined
  readonly raw?: Omit<Frame, "raw"> | undefined
}

/** Source maps per organization and release, and the symbolication of minified frames. */
export class SourceMaps extends Context.Service<SourceMaps, {
  /**
   * Maps the frames of `release` that have a source map to their original file, function,
   * line and column (the frame as received kept in `raw`); other frames pass unchanged.
   * Frames are in Sentry order: outermost caller first, the crashing frame last.
   */
  symbolicate<F extends Frame>(
    orgId: string,
    release: string | undefined,
    frames: ReadonlyArray<F>
  ): Effect.Effect<ReadonlyArray<F>>
}>()("canopy/observe/SourceMaps") {
  static readonly layer = Layer.succeed(SourceMaps, {
    symbolicate: (_orgId, _release, frames) => Effect.succeed(frames)
  })
}
