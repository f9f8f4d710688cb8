import type { SqlClient } from "effect/sql"

/*
 * The `spent_challenges` table: the signatures of redeemed ALTCHA challenges until they expire.
 */

/** Forgets the challenges that expired (a replay of one fails its own expiry check). */
export const deleteExpiredChallenges = (sql: SqlClient.SqlClient) =>
  sql`DELETE FROM spent_challenges WHERE expires_at < now()`

/** Spends a challenge: returns one row if it was not spent before, none if it was. */
export const spendChallenge = (sql: SqlClient.SqlClient, signature: string, expiresAt: Date) =>
  sql`
    INSERT INTO spent_challenges (signature, expires_at) VALUES (${signature}, ${expiresAt})
    ON CONFLICT (signature) DO NOTHING RETURNING signature`
