import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import {
  type AddMember,
  type CreateOrganization,
  type Organization,
  Plan,
  Role,
  type UpdateOrganization,
  type User
} from "../../schemas/tenancy/Tenancy.ts"
import { OrgUpdatedEvent } from "../../schemas/tenancy/Tenancy.ts"
import { publish } from "../events/Events.ts"
import { makeId } from "../platform/Ids.ts"
import { Int8, orDieOnSchema } from "../platform/Rows.ts"
import { plans, requestsPerMinute } from "./Plans.ts"

/** An `organizations` row as selected by `organizationColumns` (`project_id` is a bigint, read as text). */
const OrganizationRow = Schema.Struct({
  id: Schema.String,
  slug: Schema.String,
  name: Schema.String,
  plan: Plan,
  project_id: Schema.Union([Schema.Number, Schema.String]),
  requests_per_minute: Schema.NullOr(Schema.Number),
  storage_limit_bytes: Schema.NullOr(Int8),
  created_at: Schema.Date
})
type OrganizationRow = typeof OrganizationRow.Type

/** A `users` row, with the membership's role where it was joined. */
const UserRow = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  role: Schema.optionalKey(Role),
  created_at: Schema.Date
})
type UserRow = typeof UserRow.Type

const organizationColumns =
  "id, slug, name, plan, project_id::text AS project_id, requests_per_minute, storage_limit_bytes, created_at"
const userColumns = "id, username, email, name, created_at"

const decodeOrganization = Schema.decodeUnknownEffect(OrganizationRow)
const decodeUser = Schema.decodeUnknownEffect(UserRow)
/** The row a write returned, decoded (a write that returns nothing or another shape is a bug). */
const returnedRow =
  <A>(decode: (row: unknown) => Effect.Effect<A, Schema.SchemaError>) => (rows: ReadonlyArray<unknown>) =>
    rows.length === 0 ? Effect.die(new Error("the write returned no row")) : Effect.orDie(decode(rows[0]))

export const toOrganization = (row: OrganizationRow): Organization => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  plan: row.plan,
  projectId: Number(row.project_id),
  requestsPerMinute: row.requests_per_minute ?? requestsPerMinute[row.plan],
  storageLimitBytes: row.storage_limit_bytes ?? plans[row.plan].storageBytes,
  createdAt: row.created_at.toISOString()
})

export const toUser = (row: UserRow): User => ({
  id: row.id,
  username: row.username,
  email: row.email,
  name: row.name,
  ...(row.role !== undefined ? { role: row.role } : {}),
  createdAt: row.created_at.toISOString()
})

export const isUniqueViolation = (error: SqlError) => error.reason._tag === "UniqueViolation"

/**
 * Organizations, users and memberships (GUIDE §3). Changes that other runners cache
 * (plan, name) are announced as `org.updated` domain events by the caller's layer.
 */
export class Tenancy extends Context.Service<Tenancy, {
  createOrganization(input: CreateOrganization): Effect.Effect<Organization, Conflict>
  updateOrganization(slug: string, input: UpdateOrganization): Effect.Effect<Organization, NotFound>
  findOrganization(slug: string): Effect.Effect<Organization, NotFound>
  listOrganizations(): Effect.Effect<ReadonlyArray<Organization>>
  addMember(slug: string, input: AddMember): Effect.Effect<User, NotFound | Conflict>
  findMember(orgId: string, username: string): Effect.Effect<Option.Option<User>>
}>()("canopy/tenancy/Tenancy") {
  static readonly layer = Layer.effect(
    Tenancy,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const notFound = (slug: string) => new NotFound({ message: `Organization '${slug}' not found` })
      const orgColumns = sql.literal(organizationColumns)
      const usersColumns = sql.literal(userColumns)

      const organizationBySlug = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: OrganizationRow,
        execute: (slug) => sql`SELECT ${orgColumns} FROM organizations WHERE slug = ${slug}`
      })
      const allOrganizations = SqlSchema.findAll({
        Request: Schema.Void,
        Result: OrganizationRow,
        execute: () => sql`SELECT ${orgColumns} FROM organizations ORDER BY created_at DESC`
      })
      const userByUsername = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: UserRow,
        execute: (username) => sql`SELECT ${usersColumns} FROM users WHERE username = ${username} FOR UPDATE`
      })
      const memberByUsername = SqlSchema.findOneOption({
        Request: Schema.Struct({ orgId: Schema.String, username: Schema.String }),
        Result: UserRow,
        execute: ({ orgId, username }) =>
          sql`
            SELECT u.id, u.username, u.email, u.name, u.created_at, m.role
            FROM users u JOIN memberships m ON m.user_id = u.id
            WHERE m.org_id = ${orgId} AND u.username = ${username}`
      })

      const findOrganization = Effect.fn("Tenancy.findOrganization")(function*(slug: string) {
        const row = yield* organizationBySlug(slug).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* notFound(slug)
        return toOrganization(row.value)
      })

      const createOrganization = Effect.fn("Tenancy.createOrganization")(function*(input: CreateOrganization) {
        const row = yield* sql`
          INSERT INTO organizations (id, slug, name, plan, requests_per_minute)
          VALUES (${makeId("org")}, ${input.slug}, ${input.name}, ${input.plan ?? "free"},
                  ${input.requestsPerMinute ?? null})
          RETURNING ${orgColumns}`.pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `Organization slug '${input.slug}' is taken` }))
              : Effect.die(error)),
          Effect.flatMap(returnedRow(decodeOrganization))
        )
        return toOrganization(row)
      })

      const updateOrganization = Effect.fn("Tenancy.updateOrganization")(
        function*(slug: string, input: UpdateOrganization) {
          const current = yield* findOrganization(slug)
          const update = sql`
            UPDATE organizations SET
              name = ${input.name ?? current.name},
              plan = ${input.plan ?? current.plan},
              requests_per_minute = ${
            input.requestsPerMinute === undefined
              ? sql`requests_per_minute`
              : input.requestsPerMinute
          },
              storage_limit_bytes = ${
            input.storageLimitBytes === undefined
              ? sql`storage_limit_bytes`
              : input.storageLimitBytes
          },
              updated_at = now()
            WHERE id = ${current.id}
            RETURNING ${orgColumns}`
          // Runners cache the plan with each key lookup; the event tells them to drop it.
          const rows = yield* sql.withTransaction(
            Effect.tap(update, () => publish(OrgUpdatedEvent.make(current.id, { slug })))
          ).pipe(Effect.orDie, Effect.provideService(SqlClient.SqlClient, sql))
          return toOrganization(yield* returnedRow(decodeOrganization)(rows))
        }
      )

      const listOrganizations = Effect.fn("Tenancy.listOrganizations")(function*() {
        const rows = yield* allOrganizations(undefined).pipe(Effect.orDie)
        return rows.map(toOrganization)
      })

      const addMember = Effect.fn("Tenancy.addMember")(function*(slug: string, input: AddMember) {
        const org = yield* findOrganization(slug)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const existing = yield* orDieOnSchema(userByUsername(input.username))
          const user = Option.isSome(existing)
            ? existing.value
            : yield* sql`
                INSERT INTO users (id, username, email, name)
                VALUES (${makeId("usr")}, ${input.username}, ${input.email}, ${input.name ?? null})
                RETURNING ${usersColumns}`.pipe(Effect.flatMap(returnedRow(decodeUser)))
          const role = input.role ?? "member"
          yield* sql`
            INSERT INTO memberships (org_id, user_id, role) VALUES (${org.id}, ${user.id}, ${role})
            ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`
          return toUser({ ...user, role })
        })).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `User '${input.username}' already exists` }))
              : Effect.die(error))
        )
      })

      const findMember = Effect.fn("Tenancy.findMember")(function*(orgId: string, username: string) {
        const row = yield* memberByUsername({ orgId, username }).pipe(Effect.orDie)
        return Option.map(row, toUser)
      })

      return Tenancy.of({
        createOrganization,
        updateOrganization,
        findOrganization,
        listOrganizations,
        addMember,
        findMember
      })
    })
  )
}
