import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  SubscribeFailed,
  type SubscribeRequest,
  type SubscribeResult
} from "../../schemas/subscriptions/Subscriptions.ts"
import { renderMailHtml } from "../mail/mailLayout.ts"
import { enqueueMails } from "../mail/MailOutbox.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Crypto } from "../platform/Crypto.ts"
import { ownedComponentIds } from "../status/Components.ts"
import { organizationNameById, organizationNameBySlug } from "../tenancy/Tenancy.ts"
import { Challenges } from "./Challenges.ts"
import { SigningSecret } from "./SigningSecret.ts"
import { confirmSubscriber, deleteSubscriber, upsertSubscriber } from "./SubscriberRows.ts"

/**
 * Status page e-mail subscriptions with double opt-in (GUIDE §6):
 *
 * - `subscribe` spends a proof-of-work token, then records the address unconfirmed and
 *   mails a confirmation link (a random token, stored hashed). The answer never tells
 *   whether the address was known: a pending address gets a fresh link, a confirmed one
 *   nothing, and both get the same message as a new one.
 * - `confirm` turns the link's token into a confirmed subscription (the token then dies).
 * - Every notification carries an unsubscribe link signed with `SigningSecret`, so it needs
 *   no stored token; `unsubscribe` deletes the subscriber.
 */
const emailPattern = /^[^\s@<>(),;:"[\]\\]+@[^\s@<>(),;:"[\]\\]+\.[^\s@<>(),;:"[\]\\]+$/

export const SUBSCRIBED_MESSAGE =
  "Thanks! Check your inbox: we sent a link to confirm the subscription (if the address was not subscribed already)."

/** The token in an unsubscribe link for a subscriber. */
export const unsubscribePayload = (subscriberId: string) => `unsub:${subscriberId}`

const fail = (error: SubscribeFailed["error"], message: string) =>
  new SubscribeFailed({ success: false, error, message })

/** The status page a confirmation or unsubscribe link belongs to. */
export const SubscriptionPage = Schema.Struct({ orgSlug: Schema.String, orgName: Schema.String })
export type SubscriptionPage = typeof SubscriptionPage.Type

export class Subscriptions extends Context.Service<Subscriptions, {
  readonly subscribe: (request: SubscribeRequest) => Effect.Effect<SubscribeResult, SubscribeFailed>
  readonly confirm: (token: string) => Effect.Effect<Option.Option<SubscriptionPage>>
  readonly unsubscribe: (token: string) => Effect.Effect<Option.Option<SubscriptionPage>>
}>()("canopy/subscriptions/Subscriptions") {
  static readonly layer = Layer.effect(
    Subscriptions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const crypto = yield* Crypto
      const challenges = yield* Challenges
      const signing = yield* SigningSecret
      const { baseUrl } = yield* AppConfig
      const base = baseUrl.replace(/\/$/, "")

      const confirmationMail = (org: SubscriptionPage, subscriberId: string, email: string, token: string) => {
        const link = `${base}/api/v1/subscribe/confirm?token=${token}`
        const page = `${base}/status/${org.orgSlug}`
        const lead = `Someone (hopefully you) asked to receive ${org.orgName} status updates by e-mail at ${email}.`
        return {
          idempotencyKey: `subscribe-confirm:${subscriberId}:${crypto.hashSecret(token).slice(0, 16)}`,
          to: email,
          subject: `Confirm your subscription to ${org.orgName} status updates`,
          text: `${lead}\n\nConfirm the subscription: ${link}\n\nIf you did not ask for this, ignore this e-mail.\n` +
            `Status page: ${page}\n`,
          html: renderMailHtml({
            heading: `Confirm your subscription`,
            accent: "#2563eb",
            paragraphs: [lead, "If you did not ask for this, ignore this e-mail: nothing will be sent."],
            button: { label: "Confirm subscription", url: link },
            footer: { label: `${org.orgName} status page`, url: page }
          })
        }
      }

      const subscribe = (request: SubscribeRequest) =>
        Effect.gen(function*() {
          const email = request.email.trim().toLowerCase()
          if (!emailPattern.test(email)) return yield* fail("validation_error", "email must be an e-mail address")
          const spent = yield* challenges.redeem(request.challengeToken)
          if (spent === "expired") return yield* fail("challenge_expired", "The challenge expired: solve a new one")
          if (spent === "used") return yield* fail("challenge_used", "This challenge token was already used")
          if (spent === "invalid") return yield* fail("invalid_challenge", "The challenge token is not valid")

          const org = Option.getOrUndefined(yield* organizationNameBySlug(sql, request.orgSlug).pipe(Effect.orDie))
          if (org === undefined) return yield* fail("not_found", `No status page for '${request.orgSlug}'`)
          const components = request.components === undefined || request.components.length === 0
            ? null
            : [...new Set(request.components)]
          if (components !== null) {
            const known = yield* ownedComponentIds(sql, org.id, components).pipe(Effect.orDie)
            if (known.size !== components.length) {
              return yield* fail("validation_error", "components must be components of this status page")
            }
          }

          const token = crypto.randomToken(32)
          yield* sql.withTransaction(Effect.gen(function*() {
            const [row] = yield* upsertSubscriber(sql, {
              orgId: org.id,
              email,
              components,
              tokenHash: crypto.hashSecret(token)
            })
            // Already confirmed: nothing to send, and the answer below is the same.
            if (!row.confirmed) {
              yield* enqueueMails([
                confirmationMail({ orgSlug: org.slug, orgName: org.name }, row.id, email, token)
              ])
            }
          })).pipe(Effect.orDie)
          return { success: true as const, message: SUBSCRIBED_MESSAGE }
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      /** The status page of the organization, named as the pages show it (tenancy's read). */
      const pageOf = (orgId: string) =>
        Effect.map(
          organizationNameById(sql, orgId),
          Option.map((org): SubscriptionPage => ({ orgSlug: org.slug, orgName: org.name }))
        )

      const confirm = (token: string) =>
        Effect.gen(function*() {
          const [row] = yield* confirmSubscriber(sql, crypto.hashSecret(token))
          return row === undefined ? Option.none() : yield* pageOf(row.org_id)
        }).pipe(Effect.orDie)

      const unsubscribe = (token: string) =>
        Effect.gen(function*() {
          const payload = yield* signing.verify(token)
          if (payload === undefined || !payload.startsWith("unsub:")) return Option.none()
          const [row] = yield* deleteSubscriber(sql, payload.slice("unsub:".length))
          const page = row === undefined ? Option.none() : yield* pageOf(row.org_id)
          // A second click finds nothing left to delete, which is still a success.
          return Option.some(Option.getOrElse(page, (): SubscriptionPage => ({ orgSlug: "", orgName: "" })))
        }).pipe(Effect.orDie)

      return Subscriptions.of({ subscribe, confirm, unsubscribe })
    })
  )
}
