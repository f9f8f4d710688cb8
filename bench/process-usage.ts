import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * CPU and RSS of processes read from /proc (Linux), for benchmarks that run Canopy as child
 * processes: per process, and for a Postgres server (its postmaster and every backend).
 */

const TICKS = 100 // USER_HZ on Linux

/** The fields of `/proc/…/stat` after the command name (field 3 onwards). */
const statFields = (path: string) => {
  const stat = Fs.readFileSync(path, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** User and system CPU time of a process (or, with `tid`, one of its threads) apart, in ticks ({0, 0} once it is gone). */
export const cpuTicksSplit = (pid: number, tid?: number): { readonly user: number; readonly system: number } => {
  try {
    const fields = statFields(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`)
    return { user: Number(fields[11]), system: Number(fields[12]) } // utime, stime
  } catch {
    return { user: 0, system: 0 }
  }
}

/** User + system CPU time of a process (or, with `tid`, one of its threads), in ticks (0 once it is gone). */
export const cpuTicks = (pid: number, tid?: number): number => {
  const { system, user } = cpuTicksSplit(pid, tid)
  return user + system
}

/** `cpuTicks` plus what the children the process waited for spent (cutime + cstime: e.g. its git processes). */
export const cpuTicksWithChildren = (pid: number): number => {
  try {
    const fields = statFields(`/proc/${pid}/stat`)
    return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
  } catch {
    return 0
  }
}

export const rssBytes = (pid: number): number => {
  try {
    const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /VmRSS:\s+(\d+) kB/.exec(status)
    return match ? Number(match[1]) * 1024 : 0
  } catch {
    return 0
  }
}

/** The postmaster and its children (backends, workers) of one Postgres data directory. */
export const postgresPids = (dataDir: string): Array<number> => {
  try {
    const postmaster = Number(Fs.readFileSync(Path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
    const pids = [postmaster]
    for (const entry of Fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        if (Number(statFields(`/proc/${entry}/stat`)[1]) === postmaster) pids.push(Number(entry))
      } catch {
        // gone
      }
    }
    return pids
  } catch {
    return []
  }
}

/**
 * Postgres CPU ticks, counting backends that exit during the run (a backend's ticks are
 * read each second; an exited one keeps its last reading).
 */
const postgresTicks = (dataDir: string) => {
  const last = new Map<number, number>()
  const read = () => {
    for (const pid of postgresPids(dataDir)) {
      const ticks = cpuTicks(pid)
      if (ticks > 0) last.set(pid, ticks)
    }
    let sum = 0
    for (const ticks of last.values()) sum += ticks
    return sum
  }
  return read
}

export interface ProcessUsage {
  /** CPU of the process over the run, % of one core. */
  readonly cpuPercent: number
  /** CPU seconds used over the run. */
  readonly cpuSeconds: number
  readonly rssMax: number
  readonly rssEnd: number
}

export interface Usage {
  readonly processes: ReadonlyArray<ProcessUsage>
  readonly pgCpuPercent: number
  readonly pgCpuSeconds: number
  /** The machine's 1-minute load average at the end of the run. */
  readonly loadAverage: number
}

export interface Sampler {
  readonly stop: () => Usage
}

/** Samples processes' CPU and RSS (and Postgres' CPU) every second until `stop`. */
export const sample = (pids: ReadonlyArray<number>, pgDataDir: string | undefined): Sampler => {
  const started = performance.now()
  // Not `pids.map(cpuTicks)`: the index would be read as a thread id (no such thread: 0 ticks).
  const cpu0 = pids.map((pid) => cpuTicks(pid))
  const pgTicks = pgDataDir === undefined ? () => 0 : postgresTicks(pgDataDir)
  const pg0 = pgTicks()
  const rssMax = pids.map(rssBytes)
  const timer = setInterval(() => {
    pids.forEach((pid, i) => rssMax[i] = Math.max(rssMax[i], rssBytes(pid)))
    pgTicks()
  }, 1000)
  return {
    stop: () => {
      clearInterval(timer)
      const seconds = (performance.now() - started) / 1000
      const pgCpuSeconds = (pgTicks() - pg0) / TICKS
      return {
        processes: pids.map((pid, i) => {
          const cpuSeconds = (cpuTicks(pid) - cpu0[i]) / TICKS
          const rssEnd = rssBytes(pid)
          return { cpuPercent: (cpuSeconds / seconds) * 100, cpuSeconds, rssMax: Math.max(rssMax[i], rssEnd), rssEnd }
        }),
        pgCpuPercent: (pgCpuSeconds / seconds) * 100,
        pgCpuSeconds,
        loadAverage: Number(Fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0])
      }
    }
  }
}
