import { Schema } from "effect"
import { Repository, RepositoryName } from "./Repositories.ts"

/**
 * Repository lifecycle (GUIDE §16): the trash, transfers between organizations, and the
 * organization's storage.
 */

/** A repository in the trash: purged at `purgeAt` (30 days after `deletedAt`) unless restored. */
export const TrashedRepository = Schema.Struct({
  ...Repository.fields,
  deletedAt: Schema.String,
  purgeAt: Schema.String
})
export type TrashedRepository = typeof TrashedRepository.Type

export const TrashList = Schema.Struct({ repositories: Schema.Array(TrashedRepository), count: Schema.Int })
export type TrashList = typeof TrashList.Type

/** `name`: restore under another name when the old one is taken meanwhile. */
export const RestoreRepository = Schema.Struct({ name: Schema.optional(RepositoryName) })
export type RestoreRepository = typeof RestoreRepository.Type

export const TransferState = Schema.Literals(["pending", "accepted", "declined", "expired"])
export type TransferState = typeof TransferState.Type

export const Transfer = Schema.Struct({
  id: Schema.String,
  repository: Schema.Struct({ id: Schema.String, name: Schema.String, fullName: Schema.String }),
  fromOrg: Schema.String,
  toOrg: Schema.String,
  state: TransferState,
  expiresAt: Schema.String,
  createdAt: Schema.String,
  decidedAt: Schema.NullOr(Schema.String)
})
export type Transfer = typeof Transfer.Type

export const TransferList = Schema.Struct({ transfers: Schema.Array(Transfer), count: Schema.Int })
export type TransferList = typeof TransferList.Type

export const CreateTransfer = Schema.Struct({
  targetOrg: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(40))
})
export type CreateTransfer = typeof CreateTransfer.Type

/** `GET /api/v1/code/storage`: packs + LFS of live repositories against the plan's storage. */
export const StorageUsage = Schema.Struct({
  usedBytes: Schema.Number,
  limitBytes: Schema.Number,
  /** One decimal. */
  percent: Schema.Number,
  repositories: Schema.Array(Schema.Struct({ name: Schema.String, bytes: Schema.Number }))
})
export type StorageUsage = typeof StorageUsage.Type
