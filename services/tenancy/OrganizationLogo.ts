import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { Organization } from "../../schemas/tenancy/Tenancy.ts"
import { OrgUpdatedEvent } from "../../schemas/tenancy/Tenancy.ts"
import { publish } from "../events/Events.ts"
import { OutboundGuard } from "../outbound/OutboundGuard.ts"
import { BlobStore } from "../storage/BlobStore.ts"
import { type FetchedLogo, fetchLogo, logoUrlProblem } from "./LogoFetch.ts"
import { organizationLogo, setOrganizationLogo, toOrganization } from "./OrganizationRows.ts"

/**
 * The organization's logo (issue 31): Canopy fetches the image once, when an admin sets its
 * URL, keeps its own copy in the BlobStore (`orgs/<id>/logo/<hash>`) and serves that, so the
 * public status page makes no request to a third party (no visitor's IP or Referer leaks,
 * no mixed content, nothing to break when the other host is down). Setting the URL again
 * fetches again; a failed fetch drops the copy and says why in `logoError`.
 */
export class OrganizationLogo extends Context.Service<OrganizationLogo, {
  /** A 400 unless `url` may be a logo URL (https; http too where private targets are allowed). */
  check(url: string): Effect.Effect<void, ValidationError>
  /** Fetches the logo at `url` now and records the outcome (null removes the logo). */
  set(orgId: string, url: string | null): Effect.Effect<Organization, NotFound>
  /** The copy's bytes and media type; none without a logo. */
  read(orgId: string): Effect.Effect<Option.Option<FetchedLogo>>
}>()("canopy/tenancy/OrganizationLogo") {
  static readonly layer = Layer.effect(
    OrganizationLogo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const guard = yield* OutboundGuard
      const blobs = yield* BlobStore

      const check = (url: string) => {
        const problem = logoUrlProblem(url, guard.allowPrivate)
        return problem === undefined ? Effect.void : Effect.fail(
          new ValidationError({
            message: `Invalid body.logoUrl: ${problem}`,
            details: [{ path: "body.logoUrl", message: problem }]
          })
        )
      }

      const fetchCopy = (orgId: string, url: string) =>
        fetchLogo(guard, url).pipe(
          Effect.flatMap((logo) => {
            const hash = createHash("sha256").update(logo.bytes).digest("base64url").slice(0, 27)
            const blob = `orgs/${orgId}/logo/${hash}`
            return Effect.as(
              Effect.mapError(blobs.put(blob, logo.bytes, { contentType: logo.contentType }), () =>
                "the image could not be stored"),
              { blob, contentType: logo.contentType, etag: hash }
            )
          }),
          Effect.result
        )

      const set = Effect.fn("OrganizationLogo.set")(function*(orgId: string, url: string | null) {
        const fetched = url === null ? undefined : yield* fetchCopy(orgId, url)
        const copy = fetched?._tag === "Success" ? fetched.success : null
        const error = fetched?._tag === "Failure" ? `The logo could not be fetched: ${fetched.failure}` : null
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* setOrganizationLogo(sql, orgId, { url, copy, error })
          // Every runner drops its cached status page and logo for the organization.
          if (rows.length > 0) yield* publish(OrgUpdatedEvent.make(orgId, { slug: rows[0].slug }))
          return rows
        })).pipe(Effect.orDie, Effect.provideService(SqlClient.SqlClient, sql))
        if (rows.length === 0) return yield* new NotFound({ message: "Organization not found" })
        const previous = rows[0].previous
        if (previous !== null && previous !== copy?.blob) {
          // The old copy is no longer referenced; a failed delete only leaves a stray blob.
          yield* Effect.ignore(blobs.delete(previous))
        }
        return toOrganization(rows[0])
      })

      const read = (orgId: string) =>
        Effect.gen(function*() {
          const row = yield* organizationLogo(sql, orgId).pipe(Effect.orDie)
          if (Option.isNone(row) || row.value.logo_blob === null || row.value.logo_content_type === null) {
            return Option.none()
          }
          const contentType = row.value.logo_content_type
          const bytes = yield* blobs.getBytes(row.value.logo_blob).pipe(
            Effect.map(Option.some),
            Effect.catchTag("BlobNotFound", () => Effect.succeed(Option.none())),
            Effect.orDie
          )
          return Option.map(bytes, (body): FetchedLogo => ({ bytes: body, contentType }))
        })

      return OrganizationLogo.of({ check, set, read })
    })
  )
}
