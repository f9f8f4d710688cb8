import type { Role } from "../../schemas/tenancy/Tenancy.ts"

/**
 * A user acting in an organization (pushing, merging, reviewing): who they are and their
 * role there (`member` when they have no membership). `name` falls back to the username.
 */
export interface Actor {
  readonly id: string
  readonly username: string
  readonly name: string
  readonly email: string
  readonly role: Role
}

/** The actor of an authenticated request (its key's user and role). */
export const actorOf = (principal: {
  readonly user: {
    readonly id: string
    readonly username: string
    readonly name: string | null
    readonly email: string
  }
  readonly role: Role
}): Actor => ({
  id: principal.user.id,
  username: principal.user.username,
  name: principal.user.name ?? principal.user.username,
  email: principal.user.email,
  role: principal.role
})
