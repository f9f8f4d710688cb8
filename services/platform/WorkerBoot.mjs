// Starts a worker of a WorkerPool (WorkerPool.ts): `workerData.entry` is the URL of its
// TypeScript entry. A worker thread does not inherit the tsx loader the server runs with, so
// on a Node without built-in TypeScript support the loader is registered here first.
import { readlinkSync } from "node:fs"
import { setPriority } from "node:os"
import { workerData } from "node:worker_threads"

// A pool may ask for its workers to run at a lower priority than the server's thread (Linux:
// a thread's id is a valid target of setpriority), so they use spare cores and never take one
// from the event loop. Elsewhere the worker runs at the process's priority.
if (workerData.niceness !== undefined) {
  try {
    setPriority(Number(readlinkSync("/proc/thread-self").split("/").pop()), workerData.niceness)
  } catch {
    // not Linux, or not allowed: keep the default
  }
}

if (!process.features.typescript) {
  const { register } = await import("tsx/esm/api")
  register()
}
await import(workerData.entry)
