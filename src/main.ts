import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { AppLive } from "../layers/App.ts"
import { appConfig } from "../services/platform/AppConfig.ts"
import { LoggingLive } from "../services/platform/Logging.ts"
import { loadOrCreateAdminToken } from "../services/tenancy/AdminToken.ts"

/** `npm start`: everything embedded unless the environment says otherwise (README). */
const main = Effect.gen(function*() {
  const config = yield* appConfig
  const admin = yield* loadOrCreateAdminToken(config.dataDir, config.adminToken)
  const context = yield* Layer.build(AppLive({ ...config, adminToken: Option.some(admin.token) }))
  const server = yield* HttpServer.HttpServer.pipe(Effect.provideContext(context))
  const port = server.address._tag === "UnixPathAddress" ? config.port : server.address.port
  // With LOG_FORMAT=json these lines are JSON too, and a generated admin token is not printed:
  // such logs are shipped and kept, so the token stays in its file.
  const json = config.logFormat === "json"
  const say = (message: string) =>
    json
      ? Effect.logInfo(message).pipe(Effect.provide(LoggingLive({ format: "json", level: config.logLevel ?? "info" })))
      : Console.log(message)
  yield* say(`Canopy is listening on http://localhost:${port} (docs: http://localhost:${port}/docs)`)
  if (admin.generated && !json) {
    yield* say(`Admin token (saved to ${config.dataDir}/admin-token): ${Redacted.value(admin.token)}`)
  } else if (Option.isNone(config.adminToken)) {
    yield* say(`Admin token: see ${config.dataDir}/admin-token`)
  }
  return yield* Effect.never
})

// If a finalizer cannot finish (say Postgres vanished and the cluster keeps retrying to
// release its shards), give up after a grace period instead of hanging on shutdown.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => setTimeout(() => process.exit(1), 20_000).unref())
}

NodeRuntime.runMain(
  Effect.scoped(main).pipe(
    // An operator's mistake (say a second start on a DATA_DIR in use) is one sentence, not a trace.
    Effect.catchTag("EmbeddedPostgresError", (error) =>
      Console.error(`Canopy could not start: ${error.message}`).pipe(
        Effect.andThen(Effect.sync(() => {
          process.exitCode = 1
        }))
      ))
  )
)
