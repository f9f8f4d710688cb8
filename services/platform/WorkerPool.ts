import * as Os from "node:os"
import { type ResourceLimits, type Transferable, Worker } from "node:worker_threads"

/**
 * A small pool of worker threads for pure CPU work (signature checks, ingest bodies). Each
 * worker loads its TypeScript entry through `WorkerBoot.mjs` (a worker does not inherit the
 * tsx loader; on Node 24 the entry runs by type stripping, so entries and what they import
 * use only erasable TypeScript) and answers through `WorkerEntry.serve`.
 *
 * `run` answers `undefined` when no worker can take the job — none started yet, or the
 * worker died (error or exit) before answering — and the caller then does the work itself:
 * a broken worker never loses a request, it only moves the work back to the caller's thread.
 */

export interface WorkerPoolStats {
  /** Jobs a worker answered. */
  answered: number
  /** Jobs handed back unanswered: their worker died or the job threw there. */
  abandoned: number
}

export interface WorkerPool<Request, Response> {
  /** The job's answer, or `undefined`: do it in this thread. */
  readonly run: (request: Request, transfer?: ReadonlyArray<Transferable>) => Promise<Response | undefined>
  /** Workers that have loaded their entry and take jobs (starts the pool on first call). */
  readonly ready: () => number
  readonly stats: WorkerPoolStats
  /** Stops every worker (tests); jobs under way are handed back. */
  readonly close: () => Promise<void>
}

export interface WorkerPoolOptions {
  /** At most this many workers (default: 2, never more than the machine's cores). */
  readonly size?: number
  /**
   * Whether a job waits for a worker that is still loading its entry (default true). The
   * ingest path says false: the caller's thread does the first jobs while workers load.
   */
  readonly waitForStart?: boolean
  /** V8 heap limits of each worker (e.g. a larger young generation for allocation-heavy jobs). */
  readonly resourceLimits?: ResourceLimits
  /** Nice value of the worker threads (Linux; higher is lower priority), e.g. to yield to the event loop. */
  readonly niceness?: number
}

interface Envelope<Request> {
  readonly id: number
  readonly request: Request
}

/** What a worker posts: its answer to job `id` (or that it failed), or `ready` once its entry is loaded. */
export type WorkerMessage<Response> =
  | { readonly id: number; readonly response: Response }
  | { readonly id: number; readonly failed: true }
  | { readonly ready: true }

interface Pooled<Response> {
  readonly worker: Worker
  readonly pending: Map<number, (response: Response | undefined) => void>
  ready: boolean
}

const bootUrl = new URL("./WorkerBoot.mjs", import.meta.url)

/** A pool running `entry` (a module that calls `serve`), started on first use. */
export const makeWorkerPool = <Request, Response>(
  entry: URL,
  options: WorkerPoolOptions = {}
): WorkerPool<Request, Response> => {
  const size = Math.max(1, Math.min(options.size ?? 2, Os.availableParallelism()))
  const waitForStart = options.waitForStart ?? true
  const stats: WorkerPoolStats = { answered: 0, abandoned: 0 }
  let pool: Array<Pooled<Response>> | undefined
  let nextId = 0

  const start = (): Pooled<Response> => {
    const worker = new Worker(bootUrl, {
      workerData: { entry: entry.href, niceness: options.niceness },
      ...(options.resourceLimits === undefined ? {} : { resourceLimits: options.resourceLimits })
    })
    const pooled: Pooled<Response> = { worker, pending: new Map(), ready: false }
    worker.on("message", (message: WorkerMessage<Response>) => {
      if ("ready" in message) {
        pooled.ready = true
        return
      }
      if ("failed" in message) stats.abandoned++
      else stats.answered++
      pooled.pending.get(message.id)?.("failed" in message ? undefined : message.response)
      pooled.pending.delete(message.id)
      if (pooled.pending.size === 0) worker.unref()
    })
    // A broken worker leaves the pool; its open jobs go back to their callers.
    const retire = () => {
      pool = pool?.filter((entry) => entry !== pooled)
      for (const resolve of pooled.pending.values()) {
        stats.abandoned++
        resolve(undefined)
      }
      pooled.pending.clear()
    }
    worker.on("error", retire)
    worker.on("exit", retire)
    // Idle workers must not keep the process alive (a job under way refs its worker).
    worker.unref()
    return pooled
  }

  const workers = () => {
    if (pool === undefined) {
      try {
        pool = Array.from({ length: size }, start)
      } catch {
        pool = []
      }
    }
    return pool
  }

  /** The least busy worker that may take a job now. */
  const pick = (): Pooled<Response> | undefined => {
    let best: Pooled<Response> | undefined
    for (const pooled of workers()) {
      if (!waitForStart && !pooled.ready) continue
      if (best === undefined || pooled.pending.size < best.pending.size) best = pooled
    }
    return best
  }

  const run = (request: Request, transfer?: ReadonlyArray<Transferable>) => {
    const pooled = pick()
    if (pooled === undefined) return Promise.resolve(undefined)
    return new Promise<Response | undefined>((resolve) => {
      const id = nextId++
      pooled.pending.set(id, resolve)
      pooled.worker.ref()
      pooled.worker.postMessage({ id, request } satisfies Envelope<Request>, transfer)
    })
  }

  return {
    run,
    ready: () => workers().filter((pooled) => pooled.ready).length,
    stats,
    close: async () => {
      const stopping = pool ?? []
      pool = undefined
      await Promise.all(stopping.map((pooled) => pooled.worker.terminate()))
    }
  }
}
