import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { migrations } from "../../migrations/index.ts"
import { Database } from "../../services/platform/Database.ts"
import { createTestDatabase } from "../support/database.ts"

const migratedOn = (url: string) =>
  Effect.gen(function*() {
    const db = yield* Database
    const sql = yield* SqlClient.SqlClient
    const tables = yield* sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`
    return { migrated: db.migrated, tables: tables.map((t) => t.tablename) }
  }).pipe(Effect.provide(Layer.fresh(Database.layer(Redacted.make(url), { maxConnections: 2 }))))

describe("Database", () => {
  it.effect("applies every migration once, in order", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const first = yield* migratedOn(url)
      expect(first.migrated).toEqual(Object.keys(migrations).map((key) => key.replace(/^0+/, "")))
      expect(first.tables).toEqual(
        expect.arrayContaining([
          "organizations",
          "api_keys",
          "domain_events",
          "monitors",
          "heartbeats",
          "repositories",
          "webhooks",
          "webhook_deliveries"
        ])
      )
      // A second start on the same database finds nothing left to apply.
      const second = yield* migratedOn(url)
      expect(second.migrated).toEqual([])
      expect(second.tables.sort()).toEqual(first.tables.sort())
      expect(first.tables).toEqual(
        expect.arrayContaining([
          "incidents",
          "incident_updates",
          "incident_monitors",
          "components",
          "component_monitors"
        ])
      )
      expect(first.tables).toEqual(
        expect.arrayContaining(["mail_outbox", "monitor_alerts", "subscribers", "spent_challenges", "app_secrets"])
      )
    }))
})
