import * as Fs from "node:fs"
import { cpuTicks, cpuTicksWithChildren, postgresPids } from "./process-usage.ts"

const MS_PER_TICK = 10 // USER_HZ 100

/**
 * CPU accounting from /proc: on a shared machine throughput follows whatever else runs, the
 * CPU a process spends per unit of work does not.
 */

/** utime + stime of a process in ms; 0 once it is gone. */
export const cpuMs = (pid: number): number => cpuTicks(pid) * MS_PER_TICK

/** CPU ms of a process and the children it has waited for (its git processes, say). */
export const cpuMsWithChildren = (pid: number): number => cpuTicksWithChildren(pid) * MS_PER_TICK

/** CPU ms of the Postgres of `dataDir`: the postmaster and its children (backends, workers). */
export const postgresCpuMs = (dataDir: string): number =>
  postgresPids(dataDir).reduce((total, pid) => total + cpuMs(pid), 0)

/** CPU ms of a process's main thread (its JavaScript event loop; the rest is GC helpers, libuv, workers). */
export const mainThreadCpuMs = (pid: number): number => cpuTicks(pid, pid) * MS_PER_TICK

/** Runs `phase` and adds the CPU the server process (all of it, and its main thread) and Postgres spent on it. */
export const measured = async <A>(serverPid: number, pgDir: string, phase: () => Promise<A>) => {
  const [server0, main0, pg0] = [cpuMs(serverPid), mainThreadCpuMs(serverPid), postgresCpuMs(pgDir)]
  const result = await phase()
  return {
    ...result,
    serverCpuMs: cpuMs(serverPid) - server0,
    serverMainCpuMs: mainThreadCpuMs(serverPid) - main0,
    pgCpuMs: postgresCpuMs(pgDir) - pg0
  }
}

/** The load average over the last minute, for the record next to a figure. */
export const loadAverage = (): number => Number(Fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0])
