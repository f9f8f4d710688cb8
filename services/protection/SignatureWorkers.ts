import * as Os from "node:os"
import { Worker } from "node:worker_threads"
import { type SignedBytes, verifySignatures } from "./SignatureCheck.ts"
import type { VerifyRequest, VerifyResponse } from "./SignatureWorker.ts"

/** Below this many signatures a batch is verified in the server: a worker round trip would not pay off. */
const MIN_WORKER_BATCH = 16

interface PooledWorker {
  readonly worker: Worker
  readonly pending: Map<number, (verdicts: ReadonlyArray<boolean> | undefined) => void>
}

let pool: Array<PooledWorker> | undefined
let nextId = 0

/** Batches the workers answered (tests check that large batches really leave the event loop). */
export const signatureWorkerStats = { answered: 0 }

const startWorker = (): PooledWorker => {
  const worker = new Worker(new URL("./SignatureWorker.ts", import.meta.url))
  const pooled: PooledWorker = { worker, pending: new Map() }
  worker.on("message", (response: VerifyResponse) => {
    signatureWorkerStats.answered++
    pooled.pending.get(response.id)?.(response.verdicts)
    pooled.pending.delete(response.id)
    if (pooled.pending.size === 0) worker.unref()
  })
  // A broken worker leaves the pool; its open batches are verified in the server instead.
  const retire = () => {
    pool = pool?.filter((entry) => entry !== pooled)
    for (const resolve of pooled.pending.values()) resolve(undefined)
    pooled.pending.clear()
  }
  worker.on("error", retire)
  worker.on("exit", retire)
  // Idle workers must not keep the process alive (a batch under way refs its worker).
  worker.unref()
  return pooled
}

/** The pool, started on first call (a push that will verify signatures starts it early, beside its walk). */
export const signatureWorkers = () => {
  if (pool === undefined) {
    const size = Math.max(1, Math.min(2, Os.availableParallelism()))
    try {
      pool = Array.from({ length: size }, startWorker)
    } catch {
      pool = []
    }
  }
  return pool
}

const inWorker = (pooled: PooledWorker, items: ReadonlyArray<SignedBytes>, armoredKeys: ReadonlyArray<string>) =>
  new Promise<ReadonlyArray<boolean>>((resolve) => {
    const id = nextId++
    pooled.pending.set(id, (verdicts) => resolve(verdicts ?? verifySignatures(items, armoredKeys)))
    pooled.worker.ref()
    pooled.worker.postMessage({ id, items, armoredKeys } satisfies VerifyRequest)
  })

/**
 * `verifySignatures` spread over worker threads (two at most, started on first use and
 * kept): a 100-commit push verifies on both cores and leaves the event loop to the push's
 * git processes and queries. Small batches, and any batch a worker fails, are verified
 * in the server.
 */
export const verifyInWorkers = async (
  items: ReadonlyArray<SignedBytes>,
  armoredKeys: ReadonlyArray<string>
): Promise<ReadonlyArray<boolean>> => {
  const available = items.length < MIN_WORKER_BATCH ? [] : signatureWorkers()
  if (available.length === 0) return verifySignatures(items, armoredKeys)
  const size = Math.ceil(items.length / available.length)
  const parts = await Promise.all(
    available.map((pooled, index) => inWorker(pooled, items.slice(index * size, (index + 1) * size), armoredKeys))
  )
  return parts.flat()
}
