import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Database } from "../../services/platform/Database.ts"
import { TestDatabase } from "../support/database.ts"

describe("Database", () => {
  it.effect("applies every migration once, in order", () =>
    Effect.gen(function*() {
      const db = yield* Database
      expect(db.migrated).toContain("1_platform")
      const sql = yield* SqlClient.SqlClient
      const tables = yield* sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`
      expect(tables.map((t) => t.tablename)).toEqual(
        expect.arrayContaining(["organizations", "api_keys", "domain_events"])
      )
    }).pipe(Effect.provide(TestDatabase)))
})
