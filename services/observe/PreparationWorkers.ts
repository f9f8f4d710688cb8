import { makeWorkerPool, type WorkerPool } from "../platform/WorkerPool.ts"
import type { PreparedEvent, Rejection } from "./EventRows.ts"

/**
 * Ingest bodies parsed and prepared on worker threads (`PreparationWorker.ts`): JSON
 * parsing, validation, the rows' JSON text and stack hashes are most of the server's CPU
 * per ingested event, and the server's one thread is the serial stage of ingestion, so
 * moving them lets a second core share the work. The server keeps HTTP, source maps and
 * the commit.
 */

/** A job: the body's bytes (a copy: the server keeps its own to redo the job should the worker die). */
export interface PrepareBody {
  readonly bytes: Uint8Array
  readonly receivedAt: number
}

/** The worker's answer: the body refused as a whole, or rows (not symbolicated) and rejections by index. */
export type BodyPreparation =
  | { readonly invalid: string }
  | {
    readonly events: ReadonlyArray<PreparedEvent>
    readonly rejected: ReadonlyArray<Rejection>
    readonly single: boolean
  }

/**
 * Bodies below this size are prepared in the server: a single event (about 3 KB in the
 * benchmark) costs less there than a worker round trip and a thread switch.
 */
export const minWorkerBodyBytes = 16 * 1024

/**
 * The runner's preparation workers: started on first use; until a worker has loaded its
 * code, bodies are prepared in the server (no request waits for a worker to start).
 */
export const preparationWorkers: WorkerPool<PrepareBody, BodyPreparation> = makeWorkerPool(
  new URL("./PreparationWorker.ts", import.meta.url),
  // Below the event loop's priority: the workers take spare CPU and never the server's thread,
  // which stays the serial stage of ingestion.
  { waitForStart: false, niceness: 10 }
)
