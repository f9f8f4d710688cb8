import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * CPU accounting from /proc: on a shared machine throughput follows whatever else runs, the
 * CPU a process spends per unit of work does not.
 */

/** utime + stime of a process in ms (USER_HZ 100); 0 once it is gone. */
export const cpuMs = (pid: number): number => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

/** CPU ms of the Postgres of `dataDir`: the postmaster and its children (backends, workers). */
export const postgresCpuMs = (dataDir: string): number => {
  const postmaster = Number(Fs.readFileSync(Path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
  let total = cpuMs(postmaster)
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster) total += cpuMs(Number(entry))
    } catch {
      // gone
    }
  }
  return total
}

/** Runs `phase` and adds the CPU the server process and Postgres spent on it. */
export const measured = async <A>(serverPid: number, pgDir: string, phase: () => Promise<A>) => {
  const [server0, pg0] = [cpuMs(serverPid), postgresCpuMs(pgDir)]
  const result = await phase()
  return { ...result, serverCpuMs: cpuMs(serverPid) - server0, pgCpuMs: postgresCpuMs(pgDir) - pg0 }
}

/** The load average over the last minute, for the record next to a figure. */
export const loadAverage = (): number => Number(Fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0])
