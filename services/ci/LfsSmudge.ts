import { Effect, Stream } from "effect"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { lfsKey } from "../git/Lfs.ts"
import type { BlobStore } from "../storage/BlobStore.ts"

/** A pointer file is small (the spec's limit is 1024 bytes) and starts with this line. */
const POINTER_MAX = 1024
const VERSION = "version https://git-lfs.github.com/spec/v1\n"

/** The oid and size of a Git LFS pointer, or undefined when `text` is not one. */
export const parsePointer = (text: string): { readonly oid: string; readonly size: number } | undefined => {
  if (!text.startsWith(VERSION)) return undefined
  const oid = /^oid sha256:([0-9a-f]{64})$/m.exec(text)?.[1]
  const size = /^size (\d+)$/m.exec(text)?.[1]
  return oid === undefined || size === undefined ? undefined : { oid, size: Number(size) }
}

/** Regular files of `root` (symlinks neither followed nor listed), skipping `.git`. */
const files = async (root: string): Promise<Array<string>> => {
  const out: Array<string> = []
  const queue = [root]
  while (queue.length > 0) {
    const dir = queue.pop()!
    for (const entry of await FsP.readdir(dir, { withFileTypes: true })) {
      const path = Path.join(dir, entry.name)
      if (entry.isDirectory() && entry.name !== ".git") queue.push(path)
      else if (entry.isFile()) out.push(path)
    }
  }
  return out
}

/**
 * Replaces the Git LFS pointer files of a freshly exported tree with their content from
 * storage (GUIDE §14: "LFS files smudged"), before any job ran there. A pointer whose object
 * is missing stays a pointer. Returns how many files were smudged.
 */
export const smudge = (blobs: BlobStore["Service"], repoId: string, root: string) =>
  Effect.gen(function*() {
    let count = 0
    for (const path of yield* Effect.promise(() => files(root))) {
      const stat = Fs.lstatSync(path)
      if (!stat.isFile() || stat.size > POINTER_MAX) continue
      const pointer = parsePointer(Fs.readFileSync(path, "utf8"))
      if (pointer === undefined) continue
      const temp = `${path}.canopy-lfs`
      const handle = yield* Effect.promise(() => FsP.open(temp, "wx", stat.mode & 0o777))
      const written = yield* Stream.runForEach(blobs.get(lfsKey(repoId, pointer.oid)), (chunk) =>
        Effect.promise(() => handle.write(chunk))).pipe(
          Effect.as(true),
          Effect.catch(() =>
            Effect.succeed(false)
          ),
          Effect.ensuring(Effect.promise(() => handle.close()))
        )
      if (written) {
        yield* Effect.promise(() => FsP.rename(temp, path))
        count++
      } else yield* Effect.promise(() => FsP.rm(temp, { force: true }))
    }
    return count
  })
