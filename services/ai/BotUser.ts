import { Context, Effect, Layer, Option } from "effect"
import { Tenancy } from "../tenancy/Tenancy.ts"

export const BOT_USERNAME = "canopy-ai"

export interface Bot {
  readonly id: string
  readonly username: string
  readonly name: string
  readonly email: string
}

/**
 * The organization's AI bot user (GUIDE §15): one `canopy-ai` user (usernames are global),
 * made a member of an organization on its first review there, with no API keys.
 */
export class BotUser extends Context.Service<BotUser, {
  ensure(org: { readonly id: string; readonly slug: string }): Effect.Effect<Bot>
  /** The organization's bot, if it has one yet. */
  find(orgId: string): Effect.Effect<Option.Option<Bot>>
}>()("canopy/ai/BotUser") {
  static readonly layer = Layer.effect(
    BotUser,
    Effect.gen(function*() {
      const tenancy = yield* Tenancy
      const toBot = (user: { id: string; username: string; name: string | null; email: string }): Bot => ({
        id: user.id,
        username: user.username,
        name: user.name ?? "Canopy AI",
        email: user.email
      })
      const add = (slug: string) =>
        tenancy.addMember(slug, {
          username: BOT_USERNAME,
          email: "canopy-ai@users.noreply.canopy",
          name: "Canopy AI",
          role: "member"
        })
      const find = (orgId: string) => Effect.map(tenancy.findMember(orgId, BOT_USERNAME), Option.map(toBot))
      const ensure = (org: { readonly id: string; readonly slug: string }) =>
        Effect.gen(function*() {
          const found = yield* find(org.id)
          if (Option.isSome(found)) return found.value
          // Two first reviews at once: the loser of the insert finds the winner's user.
          return toBot(yield* add(org.slug).pipe(Effect.retry({ times: 2 })))
        }).pipe(Effect.orDie)
      return BotUser.of({ ensure, find })
    })
  )
}
