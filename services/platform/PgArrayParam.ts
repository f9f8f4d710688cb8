import { PgTypes } from "@effect/sql-pg"
import { Result } from "effect"

/**
 * A typed binary array parameter (`PgTypes.array`) for statements that take their rows as one
 * array per column, expanded by `unnest`: Postgres reads it without parsing a JSON document.
 * The values come from our own code, so one the type cannot hold is a bug: it throws.
 */
export const pgArray = (values: ReadonlyArray<unknown>, oid: number) => Result.getOrThrow(PgTypes.array(values, oid))
