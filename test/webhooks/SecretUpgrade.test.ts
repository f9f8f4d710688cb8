import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { Crypto } from "../../services/platform/Crypto.ts"
import { bootstrapOrg, request, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { legacyV1Ciphertext } from "../support/legacyCiphertext.ts"

const masterKey = new Uint8Array(NodeCrypto.randomBytes(32))
const overrides = { masterKey: Option.some(Redacted.make(Buffer.from(masterKey).toString("hex"))) }

describe("secrets stored before purpose binding", () => {
  it.live("are rewritten bound to their purpose when the app starts (webhooks) or reads them (signing secret)", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const first = yield* startAppOnDatabase(url, overrides)
      const { key, org } = yield* bootstrapOrg(first.baseUrl, { slug: "acme" })
      const created = yield* request(`${first.baseUrl}/api/v1/webhooks`, {
        method: "POST",
        token: key,
        body: { url: "https://hooks.example.com/a", secret: "s3cr3t", events: ["*"] }
      })
      expect(created.status).toBe(201)
      const id = created.body.id as string
      const orgId = (org as { id: string }).id
      // As a database from before the upgrade holds them.
      const legacyWebhook = legacyV1Ciphertext(masterKey, orgId, "s3cr3t")
      const legacySigning = legacyV1Ciphertext(masterKey, "system", "ab".repeat(32))
      yield* first.sql`UPDATE webhooks SET secret_enc = ${legacyWebhook} WHERE id = ${id}`
      yield* first.sql`INSERT INTO app_secrets (name, ciphertext) VALUES ('subscriptions.signing', ${legacySigning})
        ON CONFLICT (name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext`
      yield* first.stop

      const second = yield* startAppOnDatabase(url, overrides)
      const [webhook] = yield* second.sql<{ secret_enc: string }>`SELECT secret_enc FROM webhooks WHERE id = ${id}`
      expect(webhook.secret_enc).toMatch(/^v2\./)
      expect((yield* request(`${second.baseUrl}/api/v1/subscribe/challenge`)).status).toBe(200)
      const [signing] = yield* second.sql<{ ciphertext: string }>`
        SELECT ciphertext FROM app_secrets WHERE name = 'subscriptions.signing'`
      expect(signing.ciphertext).toMatch(/^v2\./)

      const crypto = yield* Effect.provide(Effect.service(Crypto), Crypto.layer(masterKey))
      expect(yield* crypto.decrypt(orgId, `webhook-secret:${id}`, webhook.secret_enc)).toBe("s3cr3t")
      expect(yield* Effect.flip(crypto.decrypt(orgId, "webhook-secret:webhook_other", webhook.secret_enc)))
        .toMatchObject({ _tag: "DecryptError" })
      expect(yield* crypto.decrypt("system", "app-secret:subscriptions.signing", signing.ciphertext))
        .toBe("ab".repeat(32))
    }))
})
