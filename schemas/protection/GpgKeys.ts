import { Schema } from "effect"

/** An armored OpenPGP public key registered by a user (GUIDE §12 signed commits). */
export const CreateGpgKey = Schema.Struct({
  armoredPublicKey: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100_000)),
  name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100)))
})
export type CreateGpgKey = typeof CreateGpgKey.Type

export const GpgKey = Schema.Struct({
  id: Schema.String,
  name: Schema.NullOr(Schema.String),
  /** The primary key's 16-hex key id, upper case (as `gpg --list-keys --keyid-format long`). */
  keyId: Schema.String,
  fingerprint: Schema.String,
  /** Key ids of the subkeys (a signature may come from one of them). */
  subkeyIds: Schema.Array(Schema.String),
  emails: Schema.Array(Schema.String),
  armoredPublicKey: Schema.String,
  expiresAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type GpgKey = typeof GpgKey.Type

export const GpgKeyList = Schema.Struct({ keys: Schema.Array(GpgKey), count: Schema.Int })
export type GpgKeyList = typeof GpgKeyList.Type
