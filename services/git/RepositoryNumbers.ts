import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { takeNumber } from "./RepositoryRows.ts"

/**
 * The next number of a repository's sequence, shared by pull requests and repository
 * issues so `#n` is unambiguous (GUIDE §11). Run it inside the transaction that inserts
 * the numbered row: the row lock on the repository serialises concurrent creations.
 */
export const nextNumber = (repoId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const number = yield* takeNumber(sql, repoId).pipe(Effect.orDie)
    if (Option.isNone(number)) return yield* Effect.die(new Error(`repository ${repoId} not found`))
    return number.value
  })
