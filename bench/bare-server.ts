import { readFileSync } from "node:fs"
import { createServer } from "node:http"

/** The baseline: plain node:http answering a fixed JSON body (the same bytes Canopy returns). */
// BODY_FILE for bodies too large for an environment variable (an HTML page).
const body = process.env.BODY_FILE !== undefined ? readFileSync(process.env.BODY_FILE) : process.env.BODY ?? "{}"
createServer((_request, response) => {
  response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}).listen(Number(process.env.PORT), "127.0.0.1")

// Exit on SIGTERM (the benchmark's stop) instead of dying of it, so `--cpu-prof` writes its profile.
process.once("SIGTERM", () => process.exit(0))
