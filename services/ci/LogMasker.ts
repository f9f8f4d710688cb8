import { StringDecoder } from "node:string_decoder"

export const MASK = "***"

/**
 * Masks secret values in a job's output as it streams (GUIDE §14), also when a value is
 * split across chunks: the tail of the text that could be the start of a secret is held
 * back until the next chunk (or `end`) shows whether it is one. Bytes are decoded as UTF-8
 * across chunk boundaries too.
 */
export class LogMasker {
  private readonly secrets: ReadonlyArray<string>
  private readonly decoder = new StringDecoder("utf8")
  private pending = ""

  constructor(secrets: Iterable<string>) {
    // Longest first, so a secret containing another is masked whole; short values (a
    // single character would mask every log) are left alone.
    this.secrets = [...new Set(secrets)].filter((secret) => secret.length >= 3).sort((a, b) => b.length - a.length)
  }

  /** The masked text that is safe to emit after this chunk. */
  push(chunk: Buffer | string): string {
    const text = this.pending + (typeof chunk === "string" ? chunk : this.decoder.write(chunk))
    const masked = this.mask(text)
    const hold = this.heldBack(masked)
    this.pending = masked.slice(masked.length - hold)
    return masked.slice(0, masked.length - hold)
  }

  /** What is left, masked, once the output ended. */
  end(): string {
    const rest = this.mask(this.pending + this.decoder.end())
    this.pending = ""
    return rest
  }

  private mask(text: string): string {
    let out = text
    for (const secret of this.secrets) out = out.split(secret).join(MASK)
    return out
  }

  /** Length of the longest suffix of `text` that is a proper prefix of some secret. */
  private heldBack(text: string): number {
    let longest = 0
    for (const secret of this.secrets) {
      const max = Math.min(secret.length - 1, text.length)
      for (let n = max; n > longest; n--) {
        if (text.endsWith(secret.slice(0, n))) {
          longest = n
          break
        }
      }
    }
    return longest
  }
}
