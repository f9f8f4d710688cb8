import { randomInt } from "node:crypto"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** A random base62 string from the CSPRNG (no modulo bias: `randomInt` is uniform). */
export const randomBase62 = (length: number): string => {
  let out = ""
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)]
  return out
}

/** A resource id with the spec's prefix, e.g. `org_3kT9…`. */
export const makeId = (prefix: string): string => `${prefix}_${randomBase62(20)}`
