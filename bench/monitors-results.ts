import type { Usage } from "./process-usage.ts"

/** `bench:monitors`: one measured run (Canopy with its runners, or the bare baseline) and its table rows. */

export const FREQUENCY = 60

export interface Lateness {
  readonly checks: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** One runner process' share of a run. */
export interface RunnerFigures extends Lateness {
  readonly checksPerSecond: number
  readonly cpuPercent: number
  /** CPU milliseconds of the runner process per check it ran. */
  readonly cpuMsPerCheck: number
  readonly rssMiB: number
}

export interface RunResult extends Lateness {
  readonly system: string
  readonly runners: number
  readonly monitors: number
  readonly seconds: number
  readonly missed: number
  readonly checksPerSecond: number
  /** Share of the monitors checked for their slot in the last interval of the run (steady state). */
  readonly lastIntervalCheckedPercent: number
  readonly lastIntervalP99: number
  /** Every runner process together (% of one core). */
  readonly cpuPercent: number
  readonly cpuMsPerCheck: number
  readonly pgCpuPercent: number
  readonly pgCpuMsPerCheck: number
  /** The largest runner's RSS. */
  readonly rssMiB: number
  /** Committed transactions per second in Canopy's database (pg_stat_database). */
  readonly xactPerSecond: number
  /** Rows inserted, updated or deleted per second in the cluster's message tables. */
  readonly clusterRowsPerSecond: number
  readonly loadAverage: number
  readonly perRunner: ReadonlyArray<RunnerFigures>
}

/** The figures of a run plus the slots missed (monitor i's first slot is start + i·60 s / n). */
export const runResult = (
  system: string,
  run: { readonly n: number; readonly seconds: number; readonly start: number; readonly end: number },
  figures: Lateness & { readonly lastChecks: number; readonly lastP99: number },
  perRunnerLateness: ReadonlyArray<Lateness>,
  usage: Usage & { readonly xactPerSecond: number; readonly clusterRowsPerSecond: number }
): RunResult => {
  let expected = 0
  for (let i = 0; i < run.n; i++) {
    const first = run.start + Math.floor((i * FREQUENCY * 1000) / run.n)
    if (first < run.end) expected += Math.ceil((run.end - first) / (FREQUENCY * 1000))
  }
  const perCheck = (cpuSeconds: number, checks: number) => checks === 0 ? 0 : (cpuSeconds * 1000) / checks
  const cpuSeconds = usage.processes.reduce((sum, p) => sum + p.cpuSeconds, 0)
  return {
    system,
    runners: usage.processes.length,
    monitors: run.n,
    seconds: run.seconds,
    checks: figures.checks,
    missed: Math.max(0, expected - figures.checks),
    checksPerSecond: figures.checks / run.seconds,
    p50: figures.p50,
    p99: figures.p99,
    max: figures.max,
    lastIntervalCheckedPercent: (figures.lastChecks / run.n) * 100,
    lastIntervalP99: figures.lastP99,
    cpuPercent: usage.processes.reduce((sum, p) => sum + p.cpuPercent, 0),
    cpuMsPerCheck: perCheck(cpuSeconds, figures.checks),
    pgCpuPercent: usage.pgCpuPercent,
    pgCpuMsPerCheck: perCheck(usage.pgCpuSeconds, figures.checks),
    rssMiB: Math.max(...usage.processes.map((p) => p.rssMax)) / (1024 * 1024),
    xactPerSecond: usage.xactPerSecond,
    clusterRowsPerSecond: usage.clusterRowsPerSecond,
    loadAverage: usage.loadAverage,
    perRunner: usage.processes.length < 2 ? [] : usage.processes.map((process, i) => {
      const lateness = perRunnerLateness[i] ?? { checks: 0, p50: 0, p99: 0, max: 0 }
      return {
        ...lateness,
        checksPerSecond: lateness.checks / run.seconds,
        cpuPercent: process.cpuPercent,
        cpuMsPerCheck: perCheck(process.cpuSeconds, lateness.checks),
        rssMiB: process.rssMax / (1024 * 1024)
      }
    })
  }
}

/** The run's table rows: the whole run, then each runner of a multi-runner run. */
export const toRows = (result: RunResult) => {
  const row = {
    system: result.system,
    runner: result.runners > 1 ? "all" : "-",
    monitors: result.monitors,
    "duration s": result.seconds,
    checks: String(result.checks),
    missed: String(result.missed),
    "checks/s": result.checksPerSecond,
    "late p50 ms": result.p50,
    "late p99 ms": result.p99,
    "late max ms": result.max,
    "last min checked %": result.lastIntervalCheckedPercent,
    "last min p99 ms": result.lastIntervalP99,
    "CPU %": result.cpuPercent,
    "CPU ms/check": result.cpuMsPerCheck,
    "PG CPU %": result.pgCpuPercent,
    "PG ms/check": result.pgCpuMsPerCheck,
    "RSS MiB": result.rssMiB,
    "PG commits/s": result.xactPerSecond,
    "cluster rows/s": result.clusterRowsPerSecond,
    "load avg": result.loadAverage
  }
  return [
    row,
    ...result.perRunner.map((runner, i) => ({
      ...row,
      runner: String(i + 1),
      checks: String(runner.checks),
      missed: "",
      "checks/s": runner.checksPerSecond,
      "late p50 ms": runner.p50,
      "late p99 ms": runner.p99,
      "late max ms": runner.max,
      "last min checked %": "",
      "last min p99 ms": "",
      "CPU %": runner.cpuPercent,
      "CPU ms/check": runner.cpuMsPerCheck,
      "PG CPU %": "",
      "PG ms/check": "",
      "RSS MiB": runner.rssMiB,
      "PG commits/s": "",
      "cluster rows/s": "",
      "load avg": ""
    }))
  ]
}

export type Row = ReturnType<typeof toRows>[number]

/** The lateness goal (the RSS goal is reported, not searched). */
export const meetsGoal = (result: RunResult) => result.p99 < 1000 && result.missed === 0
