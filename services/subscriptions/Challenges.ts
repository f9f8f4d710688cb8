import { createChallenge, randomInt, verifySolution } from "altcha-lib"
import type { Challenge, Payload } from "altcha-lib"
import { deriveKey } from "altcha-lib/algorithms/pbkdf2"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { SigningSecret } from "./SigningSecret.ts"
import { deleteExpiredChallenges, spendChallenge } from "./SpentChallengeRows.ts"

/**
 * ALTCHA proof of work for the public subscribe form (GUIDE §6, `altcha-lib`): a signed
 * challenge whose solution costs the browser about a second, verified statelessly by its
 * signature, and spent once: the signature of a verified challenge is recorded until the
 * challenge expires, so a token replayed on any runner is refused.
 */
const ALGORITHM = "PBKDF2/SHA-256"
/** PBKDF2 iterations per attempt; the solver tries on average ~2,500 counters. */
const COST = 500
const EXPIRES_MS = 10 * 60_000

export type ChallengeFailure = "invalid" | "expired" | "used"

const decodeToken = (token: string): Payload | undefined => {
  try {
    const payload = JSON.parse(Buffer.from(token, "base64").toString("utf8")) as Payload
    return typeof payload?.challenge?.parameters === "object" && typeof payload.solution?.counter === "number"
      ? payload
      : undefined
  } catch {
    return undefined
  }
}

export class Challenges extends Context.Service<Challenges, {
  readonly issue: Effect.Effect<Challenge>
  /** Verifies a `challengeToken` (base64 JSON `{challenge, solution}`) and spends it. */
  readonly redeem: (token: string) => Effect.Effect<ChallengeFailure | undefined>
}>()("canopy/subscriptions/Challenges") {
  static readonly layer = Layer.effect(
    Challenges,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const signing = yield* SigningSecret

      const issue = Effect.flatMap(signing.secret, (secret) =>
        Effect.promise(() =>
          createChallenge({
            algorithm: ALGORITHM,
            cost: COST,
            counter: randomInt(5_000, 500),
            deriveKey,
            expiresAt: new Date(Date.now() + EXPIRES_MS),
            hmacSignatureSecret: secret,
            hmacKeySignatureSecret: `${secret}:key`
          })
        ))

      const redeem = (token: string) =>
        Effect.gen(function*() {
          const payload = decodeToken(token)
          if (payload === undefined || payload.challenge.signature === undefined) return "invalid" as const
          const secret = yield* signing.secret
          const result = yield* Effect.tryPromise(() =>
            verifySolution({
              challenge: payload.challenge,
              solution: payload.solution,
              deriveKey,
              hmacSignatureSecret: secret,
              hmacKeySignatureSecret: `${secret}:key`
            })
          ).pipe(Effect.orElseSucceed(() => undefined))
          if (result === undefined) return "invalid" as const
          if (result.expired) return "expired" as const
          if (!result.verified) return "invalid" as const
          const expiresAt = new Date((payload.challenge.parameters.expiresAt ?? 0) * 1000 || Date.now() + EXPIRES_MS)
          yield* deleteExpiredChallenges(sql)
          const spent = yield* spendChallenge(sql, payload.challenge.signature, expiresAt)
          return spent.length === 0 ? "used" as const : undefined
        }).pipe(Effect.orDie)

      return Challenges.of({ issue, redeem })
    })
  )
}
