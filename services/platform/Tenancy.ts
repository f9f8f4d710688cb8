import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Conflict, NotFound } from "../../schemas/Errors.ts"
import type {
  AddMember,
  CreateOrganization,
  Organization,
  Plan,
  Role,
  UpdateOrganization,
  User
} from "../../schemas/Tenancy.ts"
import { OrgUpdatedEvent } from "../../schemas/Tenancy.ts"
import { publish } from "./Events.ts"
import { makeId } from "./Ids.ts"
import { requestsPerMinute } from "./Plans.ts"

interface OrganizationRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly plan: Plan
  readonly project_id: number | string
  readonly requests_per_minute: number | null
  readonly created_at: Date
}

interface UserRow {
  readonly id: string
  readonly username: string
  readonly email: string
  readonly name: string | null
  readonly role?: Role
  readonly created_at: Date
}

export const toOrganization = (row: OrganizationRow): Organization => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  plan: row.plan,
  projectId: Number(row.project_id),
  requestsPerMinute: row.requests_per_minute ?? requestsPerMinute[row.plan],
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
}>()("canopy/platform/Tenancy") {
  static readonly layer = Layer.effect(
    Tenancy,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const notFound = (slug: string) => new NotFound({ message: `Organization '${slug}' not found` })

      const findOrganization = Effect.fn("Tenancy.findOrganization")(function*(slug: string) {
        const rows = yield* sql<OrganizationRow>`SELECT * FROM organizations WHERE slug = ${slug}`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound(slug)
        return toOrganization(rows[0])
      })

      const createOrganization = Effect.fn("Tenancy.createOrganization")(function*(input: CreateOrganization) {
        const rows = yield* sql<OrganizationRow>`
          INSERT INTO organizations (id, slug, name, plan, requests_per_minute)
          VALUES (${makeId("org")}, ${input.slug}, ${input.name}, ${input.plan ?? "free"},
                  ${input.requestsPerMinute ?? null})
          RETURNING *`.pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `Organization slug '${input.slug}' is taken` }))
              : Effect.die(error))
        )
        return toOrganization(rows[0])
      })

      const updateOrganization = Effect.fn("Tenancy.updateOrganization")(
        function*(slug: string, input: UpdateOrganization) {
          const current = yield* findOrganization(slug)
          const update = sql<OrganizationRow>`
            UPDATE organizations SET
              name = ${input.name ?? current.name},
              plan = ${input.plan ?? current.plan},
              requests_per_minute = ${
            input.requestsPerMinute === undefined
              ? sql`requests_per_minute`
              : input.requestsPerMinute
          },
              updated_at = now()
            WHERE id = ${current.id}
            RETURNING *`
          // Runners cache the plan with each key lookup; the event tells them to drop it.
          const rows = yield* sql.withTransaction(
            Effect.tap(update, () => publish(OrgUpdatedEvent.make(current.id, { slug })))
          ).pipe(Effect.orDie, Effect.provideService(SqlClient.SqlClient, sql))
          return toOrganization(rows[0])
        }
      )

      const listOrganizations = Effect.fn("Tenancy.listOrganizations")(function*() {
        const rows = yield* sql<OrganizationRow>`SELECT * FROM organizations ORDER BY created_at DESC`.pipe(
          Effect.orDie
        )
        return rows.map(toOrganization)
      })

      const addMember = Effect.fn("Tenancy.addMember")(function*(slug: string, input: AddMember) {
        const org = yield* findOrganization(slug)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const existing = yield* sql<UserRow>`SELECT * FROM users WHERE username = ${input.username} FOR UPDATE`
          const user = existing.length > 0
            ? existing[0]
            : (yield* sql<UserRow>`
                INSERT INTO users (id, username, email, name)
                VALUES (${makeId("usr")}, ${input.username}, ${input.email}, ${input.name ?? null})
                RETURNING *`)[0]
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
        const rows = yield* sql<UserRow>`
          SELECT u.*, m.role FROM users u JOIN memberships m ON m.user_id = u.id
          WHERE m.org_id = ${orgId} AND u.username = ${username}`.pipe(Effect.orDie)
        return rows.length === 0 ? Option.none() : Option.some(toUser(rows[0]))
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
