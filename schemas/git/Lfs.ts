import { Schema } from "effect"

/** The Git LFS batch API (git-lfs docs/api/batch.md), basic transfer. */

export const LFS_MEDIA_TYPE = "application/vnd.git-lfs+json"

export const LfsOid = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/, { message: "must be a SHA-256 hex" }))

export const LfsObjectRef = Schema.Struct({
  oid: Schema.String,
  size: Schema.Number
})

export const LfsBatchRequest = Schema.Struct({
  operation: Schema.Literals(["upload", "download"]),
  transfers: Schema.optional(Schema.Array(Schema.String)),
  ref: Schema.optional(Schema.NullOr(Schema.Struct({ name: Schema.String }))),
  objects: Schema.Array(LfsObjectRef).check(Schema.isMaxLength(1000)),
  hash_algo: Schema.optional(Schema.String)
})
export type LfsBatchRequest = typeof LfsBatchRequest.Type

export const LfsVerifyRequest = Schema.Struct({ oid: LfsOid, size: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)) })

export interface LfsAction {
  readonly href: string
  readonly header?: Readonly<Record<string, string>>
  readonly expires_in?: number
}

export interface LfsObjectResult {
  readonly oid: string
  readonly size: number
  readonly authenticated?: boolean
  readonly actions?: Readonly<Record<string, LfsAction>>
  readonly error?: { readonly code: number; readonly message: string }
}

export interface LfsBatchResponse {
  readonly transfer: "basic"
  readonly objects: ReadonlyArray<LfsObjectResult>
  readonly hash_algo: "sha256"
}
