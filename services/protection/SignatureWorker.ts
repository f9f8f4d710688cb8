/**
 * Entry point of a signature verification worker (`SignatureWorkers.ts`): answers each
 * `{ id, items, armoredKeys }` with `{ id, verdicts }`. Loaded by Node itself (type
 * stripping), so it and `SignatureCheck.ts` use only erasable TypeScript.
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
