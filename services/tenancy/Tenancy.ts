import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import type {
  AddMember,
  CreateOrganization,
  Organization,
  UpdateOrganization,
  User
} from "../../schemas/tenancy/Tenancy.ts"
import { OrgUpdatedEvent } from "../../schemas/tenancy/Tenancy.ts"
import { publish } from "../events/Events.ts"
import { inTransaction, isUniqueViolation } from "../platform/Rows.ts"
import { memberByUsername, upsertMembership } from "./MembershipRows.ts"
import {
  allOrganizations,
  findOrganizationBySlug,
  insertOrganization,
  toOrganization,
  updateOrganizationRow
} from "./OrganizationRows.ts"
import { insertUser, lockUserByUsername, toUser } from "./UserRows.ts"

/*
 * What other features read of tenancy's tables (users, organizations, memberships): the
 * owner's statements, each taking the caller's `SqlClient` so it runs in the caller's
 * transaction. Other features import them from here, never from the Rows files, and
 * write no SQL of their own on these tables.
 */
export {
  actorInOrganization,
  memberEmails,
  memberIds,
  membersByUsername,
  memberUsernamesByEmail,
  ownerEmails,
  roleInOrganization
} from "./MembershipRows.ts"
export {
  organizationDirectory,
  type OrganizationName,
  organizationNameById,
  organizationNameBySlug,
  organizationPlan,
  organizationPlanExpression,
  organizationSlugs,
  organizationStorageOverrideExpression
} from "./OrganizationRows.ts"
export { userDirectory, userIdentity, userIdsByUsername } from "./UserRows.ts"

/** The row a write returned (a write that returns nothing is a bug). */
const returnedRow = <A>(rows: ReadonlyArray<A>) =>
  rows.length === 0 ? Effect.die(new Error("the write returned no row")) : Effect.succeed(rows[0])

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
      const findOrganization = Effect.fn("Tenancy.findOrganization")(function*(slug: string) {
        const row = yield* findOrganizationBySlug(sql, slug).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* notFound(slug)
        return toOrganization(row.value)
      })

      const createOrganization = Effect.fn("Tenancy.createOrganization")(function*(input: CreateOrganization) {
        const row = yield* insertOrganization(sql, input).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `Organization slug '${input.slug}' is taken` }))
              : Effect.die(error)),
          Effect.flatMap(returnedRow)
        )
        return toOrganization(row)
      })

      const updateOrganization = Effect.fn("Tenancy.updateOrganization")(
        function*(slug: string, input: UpdateOrganization) {
          const current = yield* findOrganization(slug)
          const update = updateOrganizationRow(sql, current.id, {
            name: input.name ?? current.name,
            plan: input.plan ?? current.plan,
            requestsPerMinute: input.requestsPerMinute,
            storageLimitBytes: input.storageLimitBytes
          })
          // Runners cache the plan with each key lookup; the event tells them to drop it.
          const rows = yield* inTransaction(
            sql,
            Effect.tap(update, () => publish(OrgUpdatedEvent.make(current.id, { slug })))
          )
          return toOrganization(yield* returnedRow(rows))
        }
      )

      const listOrganizations = Effect.fn("Tenancy.listOrganizations")(function*() {
        const rows = yield* allOrganizations(sql).pipe(Effect.orDie)
        return rows.map(toOrganization)
      })

      const addMember = Effect.fn("Tenancy.addMember")(function*(slug: string, input: AddMember) {
        const org = yield* findOrganization(slug)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const existing = yield* lockUserByUsername(sql, input.username)
          const user = Option.isSome(existing)
            ? existing.value
            : yield* insertUser(sql, input).pipe(Effect.flatMap(returnedRow))
          const role = input.role ?? "member"
          yield* upsertMembership(sql, org.id, user.id, role)
          return toUser({ ...user, role })
        })).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `User '${input.username}' already exists` }))
              : Effect.die(error))
        )
      })

      const findMember = Effect.fn("Tenancy.findMember")(function*(orgId: string, username: string) {
        const rows = yield* memberByUsername(sql, orgId, username).pipe(Effect.orDie)
        return Option.map(Option.fromUndefinedOr(rows[0]), toUser)
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
