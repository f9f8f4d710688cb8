import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { processStartTime } from "./WorkFolders.ts"

/**
 * Per-job cgroups (GUIDE §14 "memory, process count and CPU limited per job"), where this
 * runner may create them (root with a writable cgroup v1 or v2 hierarchy): the job's whole
 * process tree shares one memory limit, one CPU quota (`CI_CPUS`, throttled rather than
 * killed) and one process count. The prlimit limits stay as a second line (and are the only
 * one without cgroups). Each job's group is `canopy-ci/<pid>.<start time>-<n>` under each
 * controller: a runner sweeps the empty groups of runners that are gone when it starts.
 */

export interface CgroupLimits {
  readonly memoryBytes: number
  /** CPU cores' worth of time per period (1 = one core). */
  readonly cpus: number
  readonly processes: number
}

const PERIOD_US = 100_000

/**
 * This process's own group in a hierarchy (`/proc/self/cgroup`): jobs' groups nest under it,
 * so they stay inside whatever limits the runner itself runs under.
 */
const ownGroup = (controller: string | undefined) => {
  for (const line of Fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [, controllers, path] = line.split(":")
    if (path === undefined) continue
    if (controller === undefined ? controllers === "" : controllers.split(",").includes(controller)) return path
  }
  return "/"
}

/** Where the job groups go: `canopy-ci` under the runner's own group of each controller. */
type Layout =
  | { readonly version: 1; readonly memory: string; readonly cpu: string; readonly pids: string }
  | { readonly version: 2; readonly root: string }

const parentsOf = (layout: Layout) =>
  (layout.version === 1 ? [layout.memory, layout.cpu, layout.pids] : [layout.root]).map((dir) =>
    Path.join(dir, "canopy-ci")
  )

/** The limit files of one job's group (optional ones are skipped when the kernel lacks them). */
const limitFiles = (
  layout: Layout,
  limits: CgroupLimits,
  name: string
): Array<readonly [file: string, value: string, optional: boolean]> => {
  const quota = String(Math.round(limits.cpus * PERIOD_US))
  if (layout.version === 1) {
    const [memory, cpu, pids] = parentsOf(layout).map((parent) => Path.join(parent, name))
    return [
      [Path.join(memory, "memory.limit_in_bytes"), String(limits.memoryBytes), false],
      [Path.join(cpu, "cpu.cfs_period_us"), String(PERIOD_US), false],
      [Path.join(cpu, "cpu.cfs_quota_us"), quota, false],
      [Path.join(pids, "pids.max"), String(limits.processes), false]
    ]
  }
  const dir = Path.join(layout.root, "canopy-ci", name)
  return [
    [Path.join(dir, "memory.max"), String(limits.memoryBytes), false],
    [Path.join(dir, "memory.swap.max"), "0", true],
    [Path.join(dir, "cpu.max"), `${quota} ${PERIOD_US}`, false],
    [Path.join(dir, "pids.max"), String(limits.processes), false]
  ]
}

export interface JobCgroup {
  /** The `cgroup.procs` files the job's first process writes its pid to. */
  readonly procs: ReadonlyArray<string>
  /** Removes the group once its processes are gone. */
  readonly remove: () => Promise<void>
}

export interface JobCgroups {
  readonly version: 1 | 2
  create(limits: CgroupLimits): Promise<JobCgroup>
}

const removeDirs = async (dirs: ReadonlyArray<string>) => {
  // The kernel lets a group go only once its last process is reaped: retry for a moment.
  for (let attempt = 0; attempt < 40; attempt++) {
    let left = 0
    for (const dir of dirs) {
      try {
        await FsP.rmdir(dir)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") left++
      }
    }
    if (left === 0) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * The cgroups of this runner's jobs, or undefined where it cannot create them (not root, no
 * writable hierarchy, controllers missing): then the prlimit limits alone apply.
 */
export const makeJobCgroups = async (): Promise<JobCgroups | undefined> => {
  if (process.getuid?.() !== 0) return undefined
  let layout: Layout
  try {
    if (Fs.existsSync("/sys/fs/cgroup/cgroup.controllers")) {
      layout = { version: 2, root: Path.join("/sys/fs/cgroup", ownGroup(undefined)) }
    } else {
      layout = {
        version: 1,
        memory: Path.join("/sys/fs/cgroup/memory", ownGroup("memory")),
        cpu: Path.join("/sys/fs/cgroup/cpu", ownGroup("cpu")),
        pids: Path.join("/sys/fs/cgroup/pids", ownGroup("pids"))
      }
    }
  } catch {
    return undefined
  }
  const parents = parentsOf(layout)
  const owner = `${process.pid}.${processStartTime(process.pid) ?? "0"}`
  let counter = 0
  try {
    for (const parent of parents) await FsP.mkdir(parent, { recursive: true })
    if (layout.version === 2) {
      // Fails where the runner's group may not delegate (it holds processes itself): no cgroups then.
      await FsP.writeFile(Path.join(layout.root, "cgroup.subtree_control"), "+memory +cpu +pids")
      await FsP.writeFile(Path.join(parents[0], "cgroup.subtree_control"), "+memory +cpu +pids")
    }
    // Groups left by runners that were killed (empty once their jobs' processes died).
    for (const parent of parents) {
      for (const name of await FsP.readdir(parent)) {
        const match = /^(\d+)\.(\d+)-\d+$/.exec(name)
        if (match !== null && processStartTime(Number(match[1])) !== match[2]) {
          await FsP.rmdir(Path.join(parent, name)).catch(() => undefined)
        }
      }
    }
    const create = async (limits: CgroupLimits): Promise<JobCgroup> => {
      const name = `${owner}-${++counter}`
      const dirs = parents.map((parent) => Path.join(parent, name))
      try {
        for (const dir of dirs) await FsP.mkdir(dir)
        for (const [file, value, optional] of limitFiles(layout, limits, name)) {
          if (optional && !Fs.existsSync(file)) continue
          await FsP.writeFile(file, value)
        }
      } catch (error) {
        await removeDirs(dirs)
        throw error
      }
      return { procs: dirs.map((dir) => Path.join(dir, "cgroup.procs")), remove: () => removeDirs(dirs) }
    }
    // A probe: the hierarchy may exist yet refuse groups or limits (a read-only mount, a container).
    const probe = await create({ memoryBytes: 64 * 1024 ** 2, cpus: 1, processes: 16 })
    await probe.remove()
    return { version: layout.version, create }
  } catch {
    return undefined
  }
}

/**
 * The argv prefix that moves the job's first process into its group before anything else
 * runs (as root, before `setpriv` drops privileges); every process it starts inherits it.
 */
export const joinArgv = (group: JobCgroup): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  "for p in $1; do echo $$ > \"$p\" || exit 125; done; shift; exec \"$@\"",
  "canopy-ci-cgroup",
  group.procs.join(" ")
]
