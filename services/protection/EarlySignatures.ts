import { PackCommitScanner } from "../git/PackCommitScanner.ts"
import type { PackObserver } from "../git/PackTee.ts"
import { signedBytesOf } from "./CommitSignatures.ts"
import type { SignedBytes } from "./SignatureCheck.ts"
import { verifyInWorkers } from "./SignatureWorkers.ts"

/**
 * At most this much of a pack is held before the rules answer, and at most this much of its
 * head (the commits) is read, in the server thread; past it, commits are verified after the walk.
 */
const MAX_EARLY_PACK_BYTES = 8 * 1024 * 1024

/** Workers that verify early: one, so index-pack, running at the same time, keeps the other core. */
const EARLY_WORKERS = 1

/** Commits verified early (tests check that the early path really carries a push). */
export const earlySignatureStats = { verified: 0 }

interface Pending {
  readonly sha: string
  readonly signed: SignedBytes
}

/**
 * Signature checks of a push's commits while its pack is still received and indexed:
 * the commits the pack stores whole are read as the bytes arrive (`PackCommitScanner`),
 * their signatures verified in the workers against the organization's keys as soon as both
 * are known. The check after the walk takes the commits verified here (`settle`) and
 * verifies the rest itself, so an early result only ever saves work: a commit counts as
 * verified only when its own bytes (the ones git stores under that id) verify with the
 * same keys and code the later check uses. Anything unread, failed or late is left to it.
 */
export class EarlySignatures implements PackObserver {
  /** Chunks received before branch protection knew whether signatures matter. */
  private held: Array<Buffer> | undefined = []
  private heldBytes = 0
  private readonly toScan: Array<Buffer> = []
  private ended = false
  private scanning = false
  private off = false
  private readonly scanner = new PackCommitScanner(MAX_EARLY_PACK_BYTES)
  private queued: Array<Pending> = []
  private armoredKeys: ReadonlyArray<string> | undefined
  private readonly verified = new Set<string>()
  private readonly batches: Array<Promise<void>> = []
  private settled: Promise<ReadonlySet<string>> | undefined

  data(chunk: Buffer) {
    if (this.off || this.scanner.done) return
    if (this.held !== undefined) {
      this.held.push(chunk)
      this.heldBytes += chunk.length
      if (this.heldBytes > MAX_EARLY_PACK_BYTES) this.cancel()
      return
    }
    this.toScan.push(chunk)
    this.schedule()
  }

  end(complete: boolean) {
    if (!complete) return this.cancel()
    this.ended = true
    if (this.held === undefined) this.schedule()
  }

  /** A signed-commits rule applies to the push: its commits are read from the pack from now on. */
  start() {
    if (this.off || this.held === undefined) return
    this.toScan.push(...this.held)
    this.held = undefined
    this.schedule()
  }

  /** The organization's registered keys: the commits found so far, and later ones, are verified. */
  useKeys(armoredKeys: ReadonlyArray<string>) {
    if (armoredKeys.length === 0) return this.cancel()
    this.armoredKeys = armoredKeys
    this.dispatch()
  }

  /** Nothing to check early (no signed-commits rule, or the lookups failed). */
  cancel() {
    this.off = true
    this.held = undefined
    this.toScan.length = 0
    this.queued = []
  }

  /**
   * The commits verified early, once the batches under way have answered; nothing more is
   * read or sent after the first call (what is left is the later check's).
   */
  settle(): Promise<ReadonlySet<string>> {
    if (this.settled === undefined) {
      this.cancel()
      this.settled = Promise.all(this.batches).then(() => this.verified)
    }
    return this.settled
  }

  /** Reads the waiting chunks after the current I/O callbacks, so the pack reaches index-pack first. */
  private schedule() {
    if (this.scanning || this.off) return
    this.scanning = true
    setImmediate(() => {
      this.scanning = false
      try {
        this.scan()
      } catch {
        this.cancel()
      }
    })
  }

  private scan() {
    if (this.off) return
    const chunks = this.toScan.splice(0)
    const found = chunks.flatMap((chunk) => this.scanner.push(chunk))
    if (this.ended) found.push(...this.scanner.end())
    if (this.scanner.stopped !== undefined) this.off = true
    for (const commit of found) {
      const signed = signedBytesOf(commit.object)
      if (signed !== undefined) this.queued.push({ sha: commit.sha, signed })
    }
    this.dispatch()
  }

  private dispatch() {
    const armoredKeys = this.armoredKeys
    if (armoredKeys === undefined || this.queued.length === 0 || this.settled !== undefined) return
    const batch = this.queued
    this.queued = []
    this.batches.push(
      verifyInWorkers(batch.map((item) => item.signed), armoredKeys, { minBatch: 1, workers: EARLY_WORKERS }).then(
        (verdicts) => {
          for (const [index, ok] of verdicts.entries()) {
            if (!ok) continue
            this.verified.add(batch[index].sha)
            earlySignatureStats.verified++
          }
        },
        () => undefined
      )
    )
  }
}
