import { randomBytes } from "node:crypto"

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/**
 * A random `[A-Za-z0-9]` string from the CSPRNG. Bytes >= 248 (4 * 62) are rejected so
 * every character is equally likely (no modulo bias).
 */
export const randomBase62 = (length: number): string => {
  let out = ""
  while (out.length < length) {
    for (const byte of randomBytes(length - out.length + 16)) {
      if (byte < 248 && out.length < length) out += alphabet[byte % 62]
    }
  }
  return out
}

/** A resource id with the spec's prefix, e.g. `org_3kT9…`. */
export const makeId = (prefix: string): string => `${prefix}_${randomBase62(20)}`
