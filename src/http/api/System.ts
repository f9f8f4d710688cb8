import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"

const Health = Schema.Struct({ status: Schema.String })

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("healthz", "/healthz", { success: Health }),
  HttpApiEndpoint.get("readyz", "/readyz", {
    success: Health,
    error: Health.annotate({ httpApiStatus: 503 })
  })
) {}
