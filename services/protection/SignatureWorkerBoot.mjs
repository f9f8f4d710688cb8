// Starts a signature verification worker (see SignatureWorkers.ts). A worker thread does not
// inherit the tsx loader the server runs with, so on a Node without built-in TypeScript
// support the loader is registered here before the TypeScript entry is imported.
if (!process.features.typescript) {
  const { register } = await import("tsx/esm/api")
  register()
}
await import("./SignatureWorker.ts")
