/**
 * The worker side of a `WorkerPool`: answers each job posted to this worker with
 * `handle`'s result (and the buffers it names, transferred), then says it is ready. A
 * job that throws is answered `failed`, and its caller does it itself. Runs
 * under Node's type stripping: only erasable TypeScript here and in what entries import.
 */
import { parentPort, type Transferable } from "node:worker_threads"
import type { WorkerMessage } from "./WorkerPool.ts"

export interface Answer<Response> {
  readonly response: Response
  readonly transfer?: ReadonlyArray<Transferable>
}

export const serve = <Request, Response>(
  handle: (request: Request) => Answer<Response> | Promise<Answer<Response>>
): void => {
  const port = parentPort
  if (port === null) return
  port.on("message", async ({ id, request }: { readonly id: number; readonly request: Request }) => {
    let answer: Answer<Response>
    try {
      answer = await handle(request)
    } catch {
      // The caller does the job itself (and meets the failure there, as without workers).
      port.postMessage({ id, failed: true } satisfies WorkerMessage<Response>)
      return
    }
    port.postMessage(
      { id, response: answer.response } satisfies WorkerMessage<Response>,
      answer.transfer
    )
  })
  port.postMessage({ ready: true } satisfies WorkerMessage<Response>)
}
