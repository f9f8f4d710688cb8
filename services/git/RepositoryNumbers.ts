import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"

const NumberRow = Schema.Struct({ last_number: Schema.Int })

/**
 * The next number of a repository's sequence, shared by pull requests and repository
 * issues so `#n` is unambiguous (GUIDE §11). Run it inside the transaction that inserts
 * the numbered row: the row lock on the repository serialises concurrent creations.
 */
export const nextNumber = (repoId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const next = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: NumberRow,
      execute: (id) => sql`UPDATE repositories SET last_number = last_number + 1 WHERE id = ${id} RETURNING last_number`
    })
    const row = yield* next(repoId).pipe(Effect.orDie)
    if (row._tag === "None") return yield* Effect.die(new Error(`repository ${repoId} not found`))
    return row.value.last_number
  })
