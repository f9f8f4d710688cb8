import { Schema } from "effect"

/** What an audit entry records; today the bypasses of branch protection (GUIDE §12). */
export const AuditAction = Schema.Literals(["protection.bypass.push", "protection.bypass.merge"])
export type AuditAction = typeof AuditAction.Type

export const AuditEntry = Schema.Struct({
  id: Schema.String,
  action: AuditAction,
  actor: Schema.Struct({ id: Schema.String, username: Schema.String }),
  /** `org/repo`, or null for an organization-wide action. */
  repo: Schema.NullOr(Schema.String),
  ref: Schema.NullOr(Schema.String),
  ruleIds: Schema.Array(Schema.String),
  detail: Schema.String,
  createdAt: Schema.String
})
export type AuditEntry = typeof AuditEntry.Type

export const AuditList = Schema.Struct({ entries: Schema.Array(AuditEntry), count: Schema.Int })
export type AuditList = typeof AuditList.Type

const Timestamp = Schema.String.check(
  Schema.makeFilter((text: string) => !Number.isNaN(Date.parse(text)) || "must be an ISO 8601 timestamp")
)

/** `GET /api/v1/audit` filters; `repo` is the repository's name in the key's organization. */
export const AuditQuery = {
  action: Schema.optional(AuditAction),
  repo: Schema.optional(Schema.String),
  actor: Schema.optional(Schema.String),
  from: Schema.optional(Timestamp),
  to: Schema.optional(Timestamp),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 }))),
  offset: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
}
