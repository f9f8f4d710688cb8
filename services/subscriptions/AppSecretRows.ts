import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `app_secrets` table: secrets shared by every runner, stored encrypted (Crypto).
 */

/** An `app_secrets` row: the secret, encrypted with `Crypto`. */
const StoredSecret = Schema.Struct({ ciphertext: Schema.String })

/** Stores the secret unless one of that name exists (two runners at once: the first wins). */
export const insertSecretIfAbsent = (sql: SqlClient.SqlClient, name: string, ciphertext: string) =>
  sql`INSERT INTO app_secrets (name, ciphertext) VALUES (${name}, ${ciphertext}) ON CONFLICT (name) DO NOTHING`

export const secretByName = (sql: SqlClient.SqlClient, name: string) =>
  sql`SELECT ciphertext FROM app_secrets WHERE name = ${name}`.pipe(decodeRows(StoredSecret))

/** Replaces the ciphertext if it is still `current` (compare-and-set: runners may race). */
export const replaceSecret = (sql: SqlClient.SqlClient, name: string, current: string, next: string) =>
  sql`UPDATE app_secrets SET ciphertext = ${next} WHERE name = ${name} AND ciphertext = ${current}`
