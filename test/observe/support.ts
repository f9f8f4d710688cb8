import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { gzipSync } from "node:zlib"
import { AppLive } from "../../layers/App.ts"
import { IngestClock } from "../../services/observe/IngestClock.ts"
import { request, testConfig } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"

/**
 * The whole app on a fresh database, its ingest streams sampling and counting by `clock`
 * (a test moves it between minutes without waiting). Torn down with the test's scope.
 */
export const startWithIngestClock = (clock: { readonly now: () => number }) =>
  Effect.gen(function*() {
    const config = testConfig(yield* createTestDatabase, { dataDir: yield* tempDir("canopy-observe-") })
    const context = yield* Layer.build(AppLive(config).pipe(Layer.provide(Layer.succeed(IngestClock)(clock))))
    const address = Context.get(context, HttpServer.HttpServer).address
    return {
      baseUrl: `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`,
      sql: Context.get(context, SqlClient.SqlClient),
      config
    }
  })

/** An error event with a stack of `frames` (function, file) whose line numbers are `line + i`. */
export const errorEvent = (options: {
  readonly message?: string
  readonly type?: string
  readonly frames?: ReadonlyArray<readonly [fn: string, file: string]>
  readonly line?: number
  readonly release?: string
  readonly environment?: string
  readonly user?: string
  readonly fingerprint?: ReadonlyArray<string>
}) => ({
  message: options.message ?? "Something broke",
  level: "error",
  platform: "javascript",
  ...(options.release === undefined ? {} : { release: options.release }),
  ...(options.environment === undefined ? {} : { environment: options.environment }),
  ...(options.user === undefined ? {} : { user: { id: options.user } }),
  ...(options.fingerprint === undefined ? {} : { fingerprint: options.fingerprint }),
  exception: {
    type: options.type ?? "TypeError",
    value: options.message ?? "Something broke",
    stacktrace: {
      frames: (options.frames ?? [["main", "src/index.js"], ["handle", "src/handler.js"]]).map(([fn, file], i) => ({
        function: fn,
        filename: file,
        lineno: (options.line ?? 10) + i,
        colno: 5,
        in_app: true
      }))
    }
  },
  tags: { region: "eu" },
  breadcrumbs: [{ timestamp: "2026-11-21T10:00:00.000Z", category: "http", message: "GET /", level: "info" }]
})

/** POST to the ingest endpoint with a Bearer key (or other headers), optionally gzip-compressed. */
export const ingest = (
  baseUrl: string,
  body: unknown,
  options?: { readonly token?: string; readonly headers?: Record<string, string>; readonly gzip?: boolean }
) => {
  if (options?.gzip === true) {
    return Effect.promise(async () => {
      const response = await fetch(`${baseUrl}/api/v1/observe/ingest`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-encoding": "gzip",
          ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
          ...options.headers
        },
        body: gzipSync(JSON.stringify(body))
      })
      return { status: response.status, headers: response.headers, body: await response.json() as any }
    })
  }
  return request(`${baseUrl}/api/v1/observe/ingest`, {
    method: "POST",
    body,
    ...(options?.token === undefined ? {} : { token: options.token }),
    ...(options?.headers === undefined ? {} : { headers: options.headers })
  })
}
