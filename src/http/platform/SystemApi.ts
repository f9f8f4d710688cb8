import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { docs } from "./OpenApiDocs.ts"

const Health = Schema.Struct({ status: Schema.String })

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("healthz", "/healthz", { success: Health }).annotateMerge(
    docs("Liveness", "200 `{status: \"ok\"}` while the process serves HTTP; for load balancers and probes.")
  ),
  HttpApiEndpoint.get("readyz", "/readyz", {
    success: Health,
    error: Health.annotate({ httpApiStatus: 503 })
  }).annotateMerge(
    docs(
      "Readiness",
      "200 once migrations ran and the cluster runner is up, 503 before; route traffic only when ready."
    )
  )
) {}
