import { spawn } from "node:child_process"
import * as Http from "node:http"
import * as Net from "node:net"
import { freePort } from "./support.ts"

const BACKEND = "/usr/lib/git-core/git-http-backend"

/** A TCP proxy to `port` that counts the bytes each way. */
export const countingProxy = async (port: number) => {
  const counts = { up: 0, down: 0 }
  const server = Net.createServer((client) => {
    const upstream = Net.connect(port, "127.0.0.1")
    client.on("data", (chunk) => counts.up += chunk.length)
    upstream.on("data", (chunk) => counts.down += chunk.length)
    client.pipe(upstream).pipe(client)
    client.on("error", () => upstream.destroy())
    upstream.on("error", () => client.destroy())
  })
  const listen = await freePort()
  await new Promise<void>((resolve) => server.listen(listen, "127.0.0.1", resolve))
  return { port: listen, counts, close: () => server.close() }
}

/** `git http-backend` as CGI behind node:http (what a web server would do). */
export const startHttpBackend = async (projectRoot: string) => {
  const server = Http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost")
    const child = spawn(BACKEND, [], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: "1",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET",
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
        HTTP_CONTENT_ENCODING: req.headers["content-encoding"] ?? "",
        GIT_PROTOCOL: String(req.headers["git-protocol"] ?? ""),
        REMOTE_USER: "bench",
        REMOTE_ADDR: "127.0.0.1"
      }
    })
    req.pipe(child.stdin)
    let head = Buffer.alloc(0)
    let headersDone = false
    child.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk)
      head = Buffer.concat([head, chunk])
      const end = head.indexOf("\r\n\r\n")
      if (end < 0) return
      headersDone = true
      let status = 200
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":")
        const name = line.slice(0, colon).trim()
        const value = line.slice(colon + 1).trim()
        if (name.toLowerCase() === "status") status = Number(value.split(" ")[0])
        else res.setHeader(name, value)
      }
      res.writeHead(status)
      res.write(head.subarray(end + 4))
    })
    child.stdout.on("end", () => res.end())
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { port, close: () => server.close() }
}
