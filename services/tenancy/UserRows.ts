import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { type AddMember, Role, type User } from "../../schemas/tenancy/Tenancy.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `users` table: its rows and every statement on it (tenancy is its one owner). Each
 * takes the caller's `SqlClient`, so it runs in the caller's transaction.
 */

/** A `users` row, with the membership's role where it was joined. */
export const UserRow = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  role: Schema.optionalKey(Role),
  created_at: Schema.Date
})
export type UserRow = typeof UserRow.Type

export const toUser = (row: UserRow): User => ({
  id: row.id,
  username: row.username,
  email: row.email,
  name: row.name,
  ...(row.role !== undefined ? { role: row.role } : {}),
  createdAt: row.created_at.toISOString()
})

const first = <A>(rows: ReadonlyArray<A>) => Option.fromUndefinedOr(rows[0])

/** The user by username, locked for the caller's transaction (adding a member). */
export const lockUserByUsername = (sql: SqlClient.SqlClient, username: string) =>
  sql`SELECT id, username, email, name, created_at FROM users WHERE username = ${username} FOR UPDATE`.pipe(
    decodeRows(UserRow),
    Effect.map(first)
  )

export const insertUser = (sql: SqlClient.SqlClient, input: AddMember) =>
  sql`
    INSERT INTO users (id, username, email, name)
    VALUES (${makeId("usr")}, ${input.username}, ${input.email}, ${input.name ?? null})
    RETURNING id, username, email, name, created_at`.pipe(decodeRows(UserRow))

/** How a user signs a commit: their username, name and e-mail address. */
const UserIdentity = Schema.Struct({
  username: Schema.String,
  name: Schema.NullOr(Schema.String),
  email: Schema.String
})

export const userIdentity = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT username, name, email FROM users WHERE id = ${id}`.pipe(decodeRows(UserIdentity), Effect.map(first))

/** The ids of the users named `usernames`, as a subquery: `… AND user_id IN ${ids}`. */
export const userIdsByUsername = (sql: SqlClient.SqlClient, usernames: ReadonlyArray<string>) =>
  sql`(SELECT id FROM users WHERE username IN ${sql.in([...usernames])})`

/**
 * The users as other features join them for display: `JOIN ${userDirectory(sql)} u ON u.id = …`
 * (id, username, name, email). Postgres pulls the subquery up, so the join plans as one on
 * `users`: a list with its people stays one query while tenancy alone names its table.
 */
export const userDirectory = (sql: SqlClient.SqlClient) => sql`(SELECT id, username, name, email FROM users)`
