import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * A hard CPU quota for a benchmark's child process: its own cgroup with a CFS limit of
 * `cores` (0.5 = half of one core, enforced every 100 ms period), so a process on a shared
 * machine gets no more CPU than it would have on a small machine of its own. Linux, root,
 * cgroup v1 (`/sys/fs/cgroup/cpu`) or v2 with the `cpu` controller.
 */
export interface CpuQuota {
  readonly add: (pid: number) => void
  readonly remove: () => void
}

const periodUs = 100_000
const v1Root = "/sys/fs/cgroup/cpu"
const v2Root = "/sys/fs/cgroup"

const writeFile = (path: string, value: string) => Fs.writeFileSync(path, value)

export const makeCpuQuota = (name: string, cores: number): CpuQuota => {
  if (!(cores > 0)) throw new Error(`a CPU quota must be a positive number of cores, not ${cores}`)
  const quotaUs = String(Math.round(cores * periodUs))
  const v2 = Fs.existsSync(Path.join(v2Root, "cgroup.controllers"))
  const dir = Path.join(v2 ? v2Root : v1Root, `canopy-bench-${name}-${process.pid}`)
  try {
    Fs.mkdirSync(dir)
    if (v2) {
      writeFile(Path.join(dir, "cpu.max"), `${quotaUs} ${periodUs}`)
    } else {
      writeFile(Path.join(dir, "cpu.cfs_period_us"), String(periodUs))
      writeFile(Path.join(dir, "cpu.cfs_quota_us"), quotaUs)
    }
  } catch (error) {
    Fs.rmSync(dir, { recursive: true, force: true })
    throw new Error(
      `RUNNER_CPU needs a writable cgroup cpu controller (Linux, as root): ${(error as Error).message}`
    )
  }
  return {
    // Moving the process moves all its threads; threads it starts later stay in the group.
    add: (pid) => writeFile(Path.join(dir, "cgroup.procs"), String(pid)),
    // A cgroup is removed with rmdir once its processes have exited (best effort: an empty
    // group left behind by a process that is still exiting costs nothing).
    remove: () => {
      try {
        Fs.rmdirSync(dir)
      } catch {
        // still busy or already gone
      }
    }
  }
}
