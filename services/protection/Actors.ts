import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Role } from "../../schemas/tenancy/Tenancy.ts"
import { decodeRows } from "../platform/Rows.ts"

/** A user acting on a repository, with their role in its organization (`member` when none). */
export interface Actor {
  readonly id: string
  readonly username: string
  readonly role: Role
}

/** A user with their membership's role in the organization (null: not a member). */
const ActorRow = Schema.Struct({ id: Schema.String, username: Schema.String, role: Schema.NullOr(Role) })

/**
 * Who a pusher or merger is for branch protection: rules name users by username
 * (`restrictPushUsers`, `bypassUsers`) and owners and admins bypass every rule.
 */
export class Actors extends Context.Service<Actors, {
  inOrganization(userId: string, orgId: string): Effect.Effect<Actor | null>
}>()("canopy/protection/Actors") {
  static readonly layer = Layer.effect(
    Actors,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const inOrganization = (userId: string, orgId: string) =>
        sql`
          SELECT u.id, u.username, m.role FROM users u
          LEFT JOIN memberships m ON m.user_id = u.id AND m.org_id = ${orgId}
          WHERE u.id = ${userId}`.pipe(
          decodeRows(ActorRow),
          Effect.orDie,
          Effect.map((rows): Actor | null =>
            rows.length === 0 ? null : { id: rows[0].id, username: rows[0].username, role: rows[0].role ?? "member" }
          )
        )
      return Actors.of({ inOrganization })
    })
  )
}
