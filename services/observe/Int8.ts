import { Schema, SchemaTransformation } from "effect"

/**
 * An `int8` (bigint) column or `count(*)`: `@effect/sql-pg` hands it over as a JS `bigint`.
 * The counters it holds here stay far below 2^53, so they are read as numbers.
 */
export const Int8 = Schema.BigInt.pipe(
  Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: Number, encode: BigInt }))
)
