import { Effect, Schema, SchemaTransformation } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/*
 * Rows read from Postgres are decoded by a Schema before a service uses them, never cast:
 * a row that does not match its Schema is a bug (or a migration gone wrong), so it is a
 * defect, not an error the caller handles and not a silently wrong value.
 */

/** Turns a Schema decoding failure of stored rows into a defect. */
export const orDieOnSchema = <A, E, R>(
  self: Effect.Effect<A, E | Schema.SchemaError, R>
): Effect.Effect<A, Exclude<E, Schema.SchemaError>, R> =>
  Effect.catchIf(
    self,
    (error): error is Schema.SchemaError => Schema.isSchemaError(error),
    Effect.die
  ) as Effect.Effect<A, Exclude<E, Schema.SchemaError>, R>

/**
 * Decodes every row a statement returns with `row`: `statement.pipe(decodeRows(Row))`.
 * The statement keeps its own error (a `SqlError`); a row that does not decode is a defect.
 */
export const decodeRows = <S extends Schema.Constraint & { readonly DecodingServices: never }>(row: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(row))
  return <E, R>(
    statement: Effect.Effect<ReadonlyArray<unknown>, E, R>
  ): Effect.Effect<ReadonlyArray<S["Type"]>, E, R> => Effect.flatMap(statement, (rows) => Effect.orDie(decode(rows)))
}

/**
 * An `int8` column or a `count(*)`: `@effect/sql-pg` hands it over as a JS `bigint` (a
 * `numeric`, such as a `sum(…)` of one, comes as a string: `Schema.NumberFromString`).
 * Counts, sizes and sequence numbers stay far below 2^53, so they are read as numbers.
 */
export const Int8 = Schema.BigInt.pipe(
  Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: Number, encode: BigInt }))
)

/** A statement refused by a unique constraint (a taken name): the caller's conflict, not a defect. */
export const isUniqueViolation = (error: SqlError) => error.reason._tag === "UniqueViolation"

/**
 * Runs `effect` in one transaction of `sql`, provided to it as the `SqlClient` (so the
 * events it publishes commit with it); database failures are defects (500).
 */
export const inTransaction = <A, E>(
  sql: SqlClient.SqlClient,
  effect: Effect.Effect<A, E | SqlError, SqlClient.SqlClient>
): Effect.Effect<A, Exclude<E, SqlError>> =>
  sql.withTransaction(effect).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.catchTag("SqlError", Effect.die)
  ) as Effect.Effect<A, Exclude<E, SqlError>>
