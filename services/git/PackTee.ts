import { Transform, type TransformCallback } from "node:stream"

/** Sees a pushed pack's bytes as they pass to `index-pack` (it must not throw, and cannot slow the pack). */
export interface PackObserver {
  readonly data: (chunk: Buffer) => void
  /** The pack was read to its end (`true`), or the request broke off (`false`). */
  readonly end: (complete: boolean) => void
}

/** Where a ref update's check can watch the pack being received (`RefUpdateCheckFn.prepare`). */
export interface PackTap {
  readonly observe: (observer: PackObserver) => void
}

/**
 * The pack stream of a push, shown to observers chunk by chunk as it passes through.
 * Chunks that went by before the first observer are kept until `seal` (the commands are
 * parsed before anyone can observe), so an observer added before then sees the whole pack.
 */
export class PackTee extends Transform implements PackTap {
  private readonly observers: Array<PackObserver> = []
  private held: Array<Buffer> | undefined = []
  private ended: boolean | undefined

  observe(observer: PackObserver) {
    this.observers.push(observer)
    for (const chunk of this.held ?? []) tell(() => observer.data(chunk))
    if (this.ended !== undefined) tell(() => observer.end(this.ended!))
  }

  /** No observer can come any more: held chunks are let go. */
  seal() {
    this.held = undefined
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
    this.held?.push(chunk)
    for (const observer of this.observers) tell(() => observer.data(chunk))
    callback(null, chunk)
  }

  override _flush(callback: TransformCallback) {
    this.finish(true)
    callback()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    this.finish(false)
    callback(error)
  }

  private finish(complete: boolean) {
    if (this.ended !== undefined) return
    this.ended = complete
    for (const observer of this.observers) tell(() => observer.end(complete))
  }
}

/** An observer's failure is its own: the pack goes on to index-pack regardless. */
const tell = (call: () => void) => {
  try {
    call()
  } catch {
    // ignored on purpose
  }
}
