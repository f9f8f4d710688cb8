import { Effect } from "effect"
import { request } from "../support/app.ts"

/** Creates an incident through the API (`POST /api/v1/incidents`); returns the Incident. */
export const createIncident = (baseUrl: string, key: string, body: Record<string, unknown>) =>
  Effect.flatMap(
    request(`${baseUrl}/api/v1/incidents`, { token: key, method: "POST", body }),
    (answer) =>
      answer.status === 201
        ? Effect.succeed(answer.body)
        : Effect.die(new Error(`create incident: ${answer.status} ${JSON.stringify(answer.body)}`))
  )

/** Changes an incident through the API (`PATCH /api/v1/incidents/{id}`). */
export const patchIncident = (baseUrl: string, key: string, id: string, body: Record<string, unknown>) =>
  Effect.flatMap(
    request(`${baseUrl}/api/v1/incidents/${id}`, { token: key, method: "PATCH", body }),
    (answer) =>
      answer.status === 200
        ? Effect.succeed(answer.body)
        : Effect.die(new Error(`patch incident: ${answer.status} ${JSON.stringify(answer.body)}`))
  )
