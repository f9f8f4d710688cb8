// Starts a worker of a WorkerPool (WorkerPool.ts): `workerData.entry` is the URL of its
// TypeScript entry. A worker thread does not inherit the tsx loader the server runs with, so
// on a Node without built-in TypeScript support the loader is registered here first.
import { workerData } from "node:worker_threads"

if (!process.features.typescript) {
  const { register } = await import("tsx/esm/api")
  register()
}
await import(workerData.entry)
