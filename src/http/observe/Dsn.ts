import type { Organization } from "../../../schemas/tenancy/Tenancy.ts"

/**
 * The two DSNs of a key (GUIDE §7): Canopy's `https://<key>@<host>/<org-slug>` (header
 * `X-Service-DSN`) and the Sentry-style `https://<key>@<host>/<projectId>` for Sentry SDKs,
 * which post to `<host>/api/<projectId>/envelope/`. A path in `BASE_URL` is kept before the
 * last segment. Without an absolute `BASE_URL` (e.g. `/`) there is no host to name: no DSNs.
 */
export const dsnsFor = (
  baseUrl: string,
  key: string,
  org: Pick<Organization, "slug" | "projectId">
): { readonly dsn?: string; readonly sentryDsn?: string } => dsnsForBase(baseUrl)(key, org)

/** `dsnsFor` with `BASE_URL` parsed once (GET /api/v1/me answers it on every call). */
export const dsnsForBase = (baseUrl: string) => {
  if (!URL.canParse(baseUrl)) return (): { readonly dsn?: string; readonly sentryDsn?: string } => ({})
  const base = new URL(baseUrl)
  const scheme = `${base.protocol}//`
  const hostAndPath = `${base.host}${base.pathname.replace(/\/+$/, "")}`
  return (key: string, org: Pick<Organization, "slug" | "projectId">) => {
    const prefix = `${scheme}${key}@${hostAndPath}`
    return { dsn: `${prefix}/${org.slug}`, sentryDsn: `${prefix}/${org.projectId}` }
  }
}
