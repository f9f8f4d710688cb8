import { randomFillSync } from "node:crypto"

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// CSPRNG bytes drawn 4 KiB at a time (as crypto.randomUUID does): one call per ~190 ids
// instead of one per id on the ingest path. Each byte is used once.
const pool = new Uint8Array(4096)
let poolOffset = pool.length

const nextRandomByte = (): number => {
  if (poolOffset === pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  return pool[poolOffset++]
}

/**
 * A random `[A-Za-z0-9]` string from the CSPRNG. Bytes >= 248 (4 * 62) are rejected so
 * every character is equally likely (no modulo bias).
 */
export const randomBase62 = (length: number): string => {
  let out = ""
  while (out.length < length) {
    const byte = nextRandomByte()
    if (byte < 248) out += alphabet[byte % 62]
  }
  return out
}

/** A resource id with the spec's prefix, e.g. `org_3kT9…`. */
export const makeId = (prefix: string): string => `${prefix}_${randomBase62(20)}`
