/**
 * Entry point of a signature verification worker (`SignatureWorkers.ts`): answers each
 * `{ id, items, armoredKeys }` with `{ id, verdicts }`. Node strips its types, as for the
 * whole server.
 */
import { parentPort } from "node:worker_threads"
import { type SignedBytes, verifySignatures } from "./SignatureCheck.ts"

export interface VerifyRequest {
  readonly id: number
  readonly items: ReadonlyArray<SignedBytes>
  readonly armoredKeys: ReadonlyArray<string>
}

export interface VerifyResponse {
  readonly id: number
  readonly verdicts: ReadonlyArray<boolean>
}

parentPort?.on("message", (request: VerifyRequest) => {
  verifySignatures(request.items, request.armoredKeys).then(
    (verdicts) => parentPort?.postMessage({ id: request.id, verdicts } satisfies VerifyResponse),
    () => parentPort?.postMessage({ id: request.id, verdicts: request.items.map(() => false) })
  )
})
