import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { Role } from "../../schemas/tenancy/Tenancy.ts"
import { decodeRows } from "../platform/Rows.ts"
import type { Actor } from "./Actor.ts"
import { UserRow } from "./UserRows.ts"

/*
 * The `memberships` table, and the reads of users as members of an organization (tenancy
 * owns both tables). Each takes the caller's `SqlClient`, so it runs in the caller's
 * transaction; other features read members through these functions.
 */

export const upsertMembership = (sql: SqlClient.SqlClient, orgId: string, userId: string, role: Role) =>
  sql`
    INSERT INTO memberships (org_id, user_id, role) VALUES (${orgId}, ${userId}, ${role})
    ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`

/** The member by username, with their role. */
export const memberByUsername = (sql: SqlClient.SqlClient, orgId: string, username: string) =>
  sql`
    SELECT u.id, u.username, u.email, u.name, u.created_at, m.role
    FROM users u JOIN memberships m ON m.user_id = u.id
    WHERE m.org_id = ${orgId} AND u.username = ${username}`.pipe(decodeRows(UserRow))

const ActorRow = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  name: Schema.NullOr(Schema.String),
  email: Schema.String,
  role: Schema.NullOr(Role)
})

/** The user as an actor in the organization (`member` when not a member); undefined: no such user. */
export const actorInOrganization = (sql: SqlClient.SqlClient, userId: string, orgId: string) =>
  sql`
    SELECT u.id, u.username, u.name, u.email, m.role FROM users u
    LEFT JOIN memberships m ON m.user_id = u.id AND m.org_id = ${orgId}
    WHERE u.id = ${userId}`.pipe(
    decodeRows(ActorRow),
    Effect.map((rows) =>
      rows.map((row): Actor => ({ ...row, name: row.name ?? row.username, role: row.role ?? "member" }))[0]
    )
  )

const RoleRow = Schema.Struct({ role: Role })

/** The user's role in the organization; null when not a member (a transfer tells the two apart). */
export const roleInOrganization = (sql: SqlClient.SqlClient, orgId: string, userId: string) =>
  sql`SELECT role FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`.pipe(
    decodeRows(RoleRow),
    Effect.map((rows) => rows[0]?.role ?? null)
  )

const EmailRow = Schema.Struct({ email: Schema.String })

/** The e-mail addresses of the organization's members with one of `roles`, in order. */
export const memberEmails = (sql: SqlClient.SqlClient, orgId: string, roles: ReadonlyArray<Role>) =>
  sql`
    SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id
    WHERE m.org_id = ${orgId} AND m.role IN ${sql.in([...roles])} ORDER BY u.email`.pipe(
    decodeRows(EmailRow),
    Effect.map((rows) => rows.map((row) => row.email))
  )

/** The organization's owners' e-mail addresses (who hears of what needs the organization's attention). */
export const ownerEmails = (sql: SqlClient.SqlClient, orgId: string) => memberEmails(sql, orgId, ["owner"])

const MemberName = Schema.Struct({ id: Schema.String, username: Schema.String })

/** The members among `usernames` (the others are not members or do not exist). */
export const membersByUsername = (sql: SqlClient.SqlClient, orgId: string, usernames: ReadonlyArray<string>) =>
  sql`
    SELECT u.id, u.username FROM users u JOIN memberships m ON m.user_id = u.id
    WHERE m.org_id = ${orgId} AND u.username IN ${sql.in([...usernames])}`.pipe(decodeRows(MemberName))

const UsernameRow = Schema.Struct({ username: Schema.String })

/** The usernames of the members whose e-mail address (lower-cased) is among `emails` (lower case). */
export const memberUsernamesByEmail = (sql: SqlClient.SqlClient, orgId: string, emails: ReadonlyArray<string>) =>
  sql`
    SELECT u.username FROM users u JOIN memberships m ON m.user_id = u.id
    WHERE m.org_id = ${orgId} AND lower(u.email) IN ${sql.in([...emails])}`.pipe(
    decodeRows(UsernameRow),
    Effect.map((rows) => rows.map((row) => row.username))
  )

/** The organization's members' user ids, as a subquery: `… WHERE k.user_id IN ${ids}`. */
export const memberIds = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`(SELECT user_id FROM memberships WHERE org_id = ${orgId})`
