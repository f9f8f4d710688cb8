import { Data, Effect } from "effect"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import type { Readable } from "node:stream"
import { runGit } from "./GitProcess.ts"
import { HEAVY_NICE } from "./GitWork.ts"

/** A pushed pack that git could not index (malformed, truncated, corrupt), or objects missing. */
export class PackRejected extends Data.TaggedError("PackRejected")<{ readonly reason: string }> {}

/** A pack indexed in a quarantine, ready to be stored. */
export interface QuarantinedPack {
  readonly name: string
  readonly packPath: string
  readonly idxPath: string
  readonly objects: number
  readonly packBytes: number
  readonly idxBytes: number
}

/**
 * New objects held apart from the repository until their refs are accepted, as git's own
 * receive-pack does: git commands run with `env` see the repository's objects plus the
 * quarantined ones; nothing outside this folder changes until the pack is stored.
 */
export interface Quarantine {
  readonly dir: string
  readonly env: Readonly<Record<string, string>>
  readonly pack: QuarantinedPack | undefined
}

export const makeQuarantine = (repoDir: string, tempDir: string): Quarantine => ({
  dir: tempDir,
  env: {
    GIT_OBJECT_DIRECTORY: Path.join(tempDir, "objects"),
    GIT_ALTERNATE_OBJECT_DIRECTORIES: Path.join(repoDir, "objects")
  },
  pack: undefined
})

/** Object count of a version-2 pack index (the last fan-out entry). */
export const indexObjectCount = async (idxPath: string) => {
  const handle = await FsP.open(idxPath, "r")
  try {
    const buffer = Buffer.alloc(4)
    await handle.read(buffer, 0, 4, 8 + 255 * 4)
    return buffer.readUInt32BE(0)
  } finally {
    await handle.close()
  }
}

/**
 * Indexes a pack from `input` into the quarantine with `git index-pack --stdin --fix-thin`
 * (thin packs get their delta bases appended from the repository's objects). A pack that
 * is malformed, truncated or fails its checksum is a `PackRejected`; nothing is kept.
 */
export const indexPack = (repoDir: string, quarantine: Quarantine, input: Readable) =>
  Effect.gen(function*() {
    const packDir = Path.join(quarantine.dir, "objects", "pack")
    yield* Effect.promise(() => FsP.mkdir(packDir, { recursive: true }))
    const out = yield* runGit({
      gitDir: repoDir,
      args: ["index-pack", "--stdin", "--fix-thin"],
      env: quarantine.env,
      stdin: input,
      nice: HEAVY_NICE
    }).pipe(Effect.mapError((error) => new PackRejected({ reason: `index-pack failed: ${error.stderr.trim()}` })))
    const hash = /^(?:pack|keep)\t([0-9a-f]{40})/.exec(out.toString("utf8"))?.[1]
    if (hash === undefined) return yield* new PackRejected({ reason: "index-pack printed no pack name" })
    const name = `pack-${hash}`
    const packPath = Path.join(packDir, `${name}.pack`)
    const idxPath = Path.join(packDir, `${name}.idx`)
    const [packStat, idxStat, objects] = yield* Effect.promise(() =>
      Promise.all([FsP.stat(packPath), FsP.stat(idxPath), indexObjectCount(idxPath)])
    )
    const pack: QuarantinedPack = { name, packPath, idxPath, objects, packBytes: packStat.size, idxBytes: idxStat.size }
    return { ...quarantine, pack }
  })

/**
 * Fails unless every object reachable from `tips` is present (in the repository or the
 * quarantine), stopping at the refs the repository already has — git's `check_connected`.
 */
export const verifyConnected = (repoDir: string, quarantine: Quarantine, tips: ReadonlyArray<string>) =>
  tips.length === 0 ? Effect.void : runGit({
    gitDir: repoDir,
    args: ["rev-list", "--objects", "--stdin", "--quiet", "--not", "--all"],
    env: quarantine.env,
    stdin: tips.map((tip) => `${tip}\n`).join(""),
    nice: HEAVY_NICE
  }).pipe(
    Effect.asVoid,
    Effect.mapError((error) => new PackRejected({ reason: `missing necessary objects: ${error.stderr.trim()}` }))
  )

export const removeQuarantine = (quarantine: Quarantine) =>
  Effect.promise(() => FsP.rm(quarantine.dir, { recursive: true, force: true }))
