import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows, Int8 } from "../../services/platform/Rows.ts"
import { TestDatabase } from "../support/database.ts"

const Counted = Schema.Struct({ n: Int8, total: Schema.NumberFromString, at: Schema.Date })

describe("rows decoded by Schema", () => {
  it.live("int8 and count(*) arrive as bigints and read as numbers; numeric as a string; timestamptz as a Date", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`
        SELECT count(*) AS n, sum(x)::numeric AS total, '2026-11-27T10:00:00Z'::timestamptz AS at
        FROM (VALUES (9007199254740990::int8), (1::int8)) AS t(x)`.pipe(decodeRows(Counted))
      expect(rows).toEqual([{ n: 2, total: 9007199254740991, at: new Date("2026-11-27T10:00:00Z") }])
    }).pipe(Effect.provide(TestDatabase)))

  it.live("a stored row that does not match its Schema is a defect, not an error to handle", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const exit = yield* sql`SELECT 'not a number' AS n, '1' AS total, now() AS at`.pipe(
        decodeRows(Counted),
        Effect.exit
      )
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.hasDies(exit.cause)).toBe(true)
        expect(Cause.hasFails(exit.cause)).toBe(false)
        expect(String(Cause.squash(exit.cause))).toContain("n")
      }
    }).pipe(Effect.provide(TestDatabase)))
})
