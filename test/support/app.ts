import { Clock, Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { AppLive } from "../../layers/App.ts"
import type { AppConfigShape } from "../../services/platform/AppConfig.ts"
import { createTestDatabase } from "./database.ts"

export const adminToken = "adm_test_token_0123456789"

/**
 * A configuration like `npm start`'s, on a fresh database, serving on a free port. Without a
 * `dataDir` override it makes a data folder the caller removes (`startAppOnDatabase` does).
 */
export const testConfig = (databaseUrl: string, overrides?: Partial<AppConfigShape>): AppConfigShape => ({
  port: 0,
  host: "127.0.0.1",
  baseUrl: "http://localhost",
  databaseUrl: Option.some(Redacted.make(databaseUrl)),
  s3: Option.none(),
  smtpUrl: Option.none(),
  mailFrom: "Canopy <canopy@test>",
  adminToken: Option.some(Redacted.make(adminToken)),
  masterKey: Option.none(),
  region: "test",
  runnerAddress: Option.none(),
  runnerListenAddress: Option.none(),
  outboundAllowPrivate: true,
  trustedProxies: [],
  ...overrides,
  dataDir: overrides?.dataDir ?? Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-data-"))
})

/**
 * The app runs on the real clock, also when started from an `it.effect` test (whose TestClock
 * nothing moves): otherwise every timer of the app (the cluster's lock refreshes, health checks,
 * retry delays, timeouts) waits forever. Seen: under load a shard release failed once, its retry
 * slept 50 ms on the frozen TestClock, and closing the app never completed. A test's own `services`
 * may still provide another Clock.
 */
const realClock = Layer.succeed(Clock.Clock, Clock.Clock.defaultValue())

/**
 * The whole app on an existing database, in a scope of its own so a test can stop it
 * (`stop`) and start another on the same data; also stopped with the test's scope.
 */
export const startAppOnDatabase = (
  databaseUrl: string,
  overrides?: Partial<AppConfigShape>,
  /** Services the test provides to the whole app (e.g. a `Context.Reference` seam). */
  services?: Context.Context<never>
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const config = testConfig(databaseUrl, overrides)
    yield* Effect.addFinalizer(() =>
      Scope.close(scope, Exit.void).pipe(
        // The data folder made here holds a master key: remove it (a caller's own folder stays).
        Effect.andThen(Effect.sync(() => {
          if (overrides?.dataDir === undefined) Fs.rmSync(config.dataDir, { recursive: true, force: true })
        }))
      )
    )
    const app = (services === undefined
      ? AppLive(config)
      : AppLive(config).pipe(Layer.provide(Layer.succeedContext(services)))).pipe(Layer.provide(realClock))
    const context = yield* Layer.buildWithScope(app, scope)
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      config,
      context,
      databaseUrl,
      /** The app's own SQL client, for arranging and inspecting rows. */
      sql: Context.get(context, SqlClient.SqlClient),
      stop: Scope.close(scope, Exit.void)
    }
  })

/** The whole app on a fresh database; yields its base URL. Torn down with the test's scope. */
export const startApp = (overrides?: Partial<AppConfigShape>, services?: Context.Context<never>) =>
  Effect.flatMap(createTestDatabase, (url) => startAppOnDatabase(url, overrides, services))

export interface Json {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** `fetch` returning the status, headers and parsed JSON body (or text when not JSON). */
export const request = (
  url: string,
  init?: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> }
) =>
  Effect.promise(async (): Promise<Json> => {
    const headers: Record<string, string> = { ...init?.headers }
    if (init?.token !== undefined) headers.authorization = `Bearer ${init.token}`
    let body: string | undefined
    if (init?.body !== undefined) {
      body = typeof init.body === "string" ? init.body : JSON.stringify(init.body)
      headers["content-type"] ??= "application/json"
    }
    const response = await fetch(url, { method: init?.method ?? "GET", headers, body })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed }
  })

/** Creates an organization with an owner and a key through the admin API; returns the key's secret. */
export const bootstrapOrg = (
  baseUrl: string,
  options: { slug: string; plan?: string; role?: string; scopes?: ReadonlyArray<string>; username?: string }
) =>
  Effect.gen(function*() {
    const admin = { token: adminToken }
    const org = yield* request(`${baseUrl}/api/v1/admin/orgs`, {
      ...admin,
      method: "POST",
      body: { slug: options.slug, name: options.slug.toUpperCase(), plan: options.plan ?? "free" }
    })
    if (org.status !== 201) throw new Error(`org: ${org.status} ${JSON.stringify(org.body)}`)
    const username = options.username ?? `${options.slug}-owner`
    const user = yield* request(`${baseUrl}/api/v1/admin/orgs/${options.slug}/users`, {
      ...admin,
      method: "POST",
      body: { username, email: `${username}@example.com`, role: options.role ?? "owner" }
    })
    if (user.status !== 201) throw new Error(`user: ${user.status} ${JSON.stringify(user.body)}`)
    const key = yield* request(`${baseUrl}/api/v1/admin/orgs/${options.slug}/keys`, {
      ...admin,
      method: "POST",
      body: { username, ...(options.scopes ? { scopes: options.scopes } : {}) }
    })
    if (key.status !== 201) throw new Error(`key: ${key.status} ${JSON.stringify(key.body)}`)
    return { org: org.body, user: user.body, key: key.body.key as string, keyId: key.body.id as string }
  })
