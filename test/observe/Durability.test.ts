import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bootstrapOrg, request } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner } from "../support/processes.ts"
import { errorEvent } from "./support.ts"

/** A 202 means committed: events acknowledged before a SIGKILL are all there after a restart. */
describe("ingest durability", () => {
  it.live(
    "every event answered 202 is readable after the server is SIGKILLed mid-stream and restarted",
    () =>
      Effect.gen(function*() {
        const databaseUrl = yield* createTestDatabase
        const first = yield* startRunner(databaseUrl)
        const { key } = yield* bootstrapOrg(first.baseUrl, { slug: "durable", plan: "enterprise" })

        // 20 senders in a loop; the server is killed once 100 events were acknowledged,
        // while others are still in flight (those may fail: they were never acknowledged).
        const acknowledged: Array<string> = []
        yield* Effect.promise(async () => {
          let stop = false
          const sender = async (n: number) => {
            for (let i = 0; !stop; i++) {
              try {
                const response = await fetch(`${first.baseUrl}/api/v1/observe/ingest`, {
                  method: "POST",
                  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
                  body: JSON.stringify(errorEvent({ message: `sender ${n} event ${i}` }))
                })
                const body = await response.json() as { id?: string }
                if (response.status === 202 && body.id !== undefined) acknowledged.push(body.id)
              } catch {
                return // the server died under this request
              }
              if (acknowledged.length >= 100 && first.child.exitCode === null) first.child.kill("SIGKILL")
            }
          }
          const exited = new Promise((resolve) => first.child.once("exit", resolve))
          await Promise.all([...Array.from({ length: 20 }, (_, n) => sender(n)), exited.then(() => stop = true)])
        })
        expect(acknowledged.length).toBeGreaterThanOrEqual(100)

        const second = yield* startRunner(databaseUrl)
        const missing: Array<string> = []
        for (const id of acknowledged) {
          const event = yield* request(`${second.baseUrl}/api/v1/observe/events/${id}`, { token: key })
          if (event.status !== 200) missing.push(id)
        }
        expect(missing).toEqual([])
        const issues = yield* request(`${second.baseUrl}/api/v1/observe/issues`, { token: key })
        expect(issues.body.issues[0].count).toBeGreaterThanOrEqual(acknowledged.length)
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )
})
