import { createServer } from "node:http"
import { WebSocketServer } from "ws"

/**
 * The baseline of `bench:live`: a bare `ws` server doing the same fan-out as Canopy's live
 * stream with nothing else (no database, no auth, no Effect): `POST /publish` wraps the
 * body as `{type, data, at}` once and sends it to every connected client.
 */
const server = createServer((request, response) => {
  if (request.method === "POST" && request.url === "/publish") {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const text = `{"type":"incident.created","data":${Buffer.concat(chunks).toString("utf8")},"at":"${
        new Date().toISOString()
      }"}`
      for (const client of wss.clients) client.send(text)
      response.end("ok")
    })
    return
  }
  response.end("ok")
})
const wss = new WebSocketServer({ server, perMessageDeflate: false, maxPayload: 4096 })
server.listen(Number(process.env.PORT), "127.0.0.1")
