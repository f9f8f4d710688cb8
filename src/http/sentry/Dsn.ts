import type { Organization } from "../../../schemas/Tenancy.ts"

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
): { readonly dsn?: string; readonly sentryDsn?: string } => {
  if (!URL.canParse(baseUrl)) return {}
  const base = new URL(baseUrl)
  const prefix = `${base.protocol}//${key}@${base.host}${base.pathname.replace(/\/+$/, "")}`
  return { dsn: `${prefix}/${org.slug}`, sentryDsn: `${prefix}/${org.projectId}` }
}
