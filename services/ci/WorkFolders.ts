import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"

/**
 * The CI work folder of a runner process is `canopy-ci-<pid>.<start time>-XXXXXX`: its owner
 * is identifiable, so a runner that was killed (SIGKILL, OOM) before removing its folder
 * leaves nothing behind for long: the next runner starting on the machine sweeps folders whose
 * owner is gone, and never a live runner's (several runners may share the folder's parent).
 */

/** A process's start time (clock ticks since boot, `/proc/<pid>/stat` field 22); undefined when gone. */
export const processStartTime = (pid: number): string | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

/** The prefix of this process's work folder (for `mkdtemp`). */
export const workFolderPrefix = () => `canopy-ci-${process.pid}.${processStartTime(process.pid) ?? "0"}-`

const OWNED = /^canopy-ci-(\d+)\.(\d+)-[A-Za-z0-9]{6}$/

/** Removes the work folders under `parent` whose runner process is gone; returns their names. */
export const sweepStaleWorkFolders = async (parent: string): Promise<ReadonlyArray<string>> => {
  const names = await FsP.readdir(parent).catch(() => [] as Array<string>)
  const removed: Array<string> = []
  for (const name of names) {
    const owner = OWNED.exec(name)
    if (owner === null) continue
    // Gone, or the pid now belongs to another process (a different start time).
    if (processStartTime(Number(owner[1])) === owner[2]) continue
    await FsP.rm(Path.join(parent, name), { recursive: true, force: true })
    removed.push(name)
  }
  return removed
}
