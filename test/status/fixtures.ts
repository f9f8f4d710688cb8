import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

/** One app (fresh database, real cluster and scheduler) shared by a test file. */
export class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
  readonly context: Context.Context<never>
}>()("test/status/TestApp") {}

export const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sql: app.sql,
    context: app.context as Context.Context<never>
  }))
)

let orgCounter = 0
/** A fresh organization (enterprise plan: the request quota stays out of the way) and its key. */
export const newOrg = (prefix: string, scopes?: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `${prefix}-${process.pid}-${++orgCounter}`
    const org = yield* bootstrapOrg(baseUrl, { slug, plan: "enterprise", ...(scopes ? { scopes } : {}) })
    return { ...org, slug, orgId: org.org.id as string }
  })

/** A request to the shared app, relative to its base URL. */
export const call = (
  path: string,
  init?: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> }
) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    return yield* request(`${baseUrl}${path}`, init)
  })

let monitorCounter = 0
/**
 * A monitor row as the scheduler would leave it, its next check an hour away so none runs
 * during the test (the scheduler itself is tested with the monitoring suites).
 */
export const insertMonitor = (
  orgId: string,
  fields: { status?: string; active?: boolean; name?: string; lastCheckedAt?: Date } = {}
) =>
  Effect.gen(function*() {
    const { sql } = yield* TestApp
    const id = `mon_fixture${process.pid}x${++monitorCounter}`
    const active = fields.active ?? true
    yield* sql`
      INSERT INTO monitors (id, org_id, name, url, status, active, next_check_at, last_checked_at)
      VALUES (${id}, ${orgId}, ${fields.name ?? id}, 'http://127.0.0.1:9/', ${
      fields.status ?? (active ? "up" : "paused")
    }, ${active}, now() + interval '1 hour', ${fields.lastCheckedAt?.toISOString() ?? null}::timestamptz)`
    return id
  })

/** Expects a 400 validation_error whose details name `path` (or a path below it). */
export const expectInvalid = (response: { status: number; body: any }, path: string) => {
  if (response.status !== 400 || response.body?.error !== "validation_error") {
    throw new Error(`expected a 400 naming ${path}, got ${response.status} ${JSON.stringify(response.body)}`)
  }
  const paths: Array<string> = (response.body.details ?? []).map((detail: { path: string }) => detail.path)
  if (!paths.some((p) => p === path || p.startsWith(`${path}.`))) {
    throw new Error(`expected ${path} in ${JSON.stringify(paths)}`)
  }
}
