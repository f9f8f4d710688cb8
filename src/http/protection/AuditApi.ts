import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AuditList, AuditQuery } from "../../../schemas/protection/Audit.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

/** The organization's audit trail (GUIDE §12). Scope `org:admin`. */
export class AuditApi extends HttpApiGroup.make("audit").add(
  HttpApiEndpoint.get("list", "/api/v1/audit", { query: AuditQuery, success: AuditList }).annotate(
    RequiredScope,
    "org:admin"
  ).annotateMerge(
    docs(
      "List audit entries",
      "Bypasses of branch protection (pushes and merges a rule would have refused), newest first, filtered by " +
        "`action`, `repo` (name), `actor` (username), `from` and `to`. Scope `org:admin`."
    )
  )
).middleware(Authentication) {}
