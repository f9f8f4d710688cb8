/**
 * `bench:monitors`' baseline: a bare Node process scheduling the same N checks with
 * `setTimeout` and `node:http` (no database, no cluster), the floor for lateness and CPU.
 * `runBaseline` starts this file as a child process (MODE=baseline) and samples it.
 */
import { spawn } from "node:child_process"
import * as Http from "node:http"
import { FREQUENCY, type RunResult, runResult } from "./monitors-results.ts"
import { sample } from "./process-usage.ts"
import { percentile } from "./support.ts"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const runBaselineChild = async () => {
  const n = Number(process.env.N)
  const target = process.env.TARGET!
  const start = Number(process.env.START!)
  const end = Number(process.env.END!)
  const lateness: Array<number> = []
  const lastLateness: Array<number> = []
  let checks = 0
  const check = (url: string) =>
    new Promise<void>((resolve) => {
      const request = Http.request(url, { agent: false, timeout: 10_000 }, (response) => {
        response.resume()
        response.on("end", () => resolve())
        response.on("error", () => resolve())
      })
      request.on("error", () => resolve())
      request.on("timeout", () => request.destroy())
      request.end()
    })
  const schedule = (i: number, slot: number) => {
    if (slot >= end) return
    setTimeout(() => {
      const began = Date.now()
      lateness.push(began - slot)
      if (slot >= end - FREQUENCY * 1000) lastLateness.push(began - slot)
      checks++
      void check(`${target}/m/${i}`).then(() => schedule(i, slot + FREQUENCY * 1000))
    }, Math.max(0, slot - Date.now()))
  }
  for (let i = 0; i < n; i++) schedule(i, start + Math.floor((i * FREQUENCY * 1000) / n))
  while (Date.now() < end + 5_000) await sleep(500)
  lateness.sort((a, b) => a - b)
  lastLateness.sort((a, b) => a - b)
  process.stdout.write(
    JSON.stringify({
      checks,
      p50: percentile(lateness, 50),
      p99: percentile(lateness, 99),
      max: lateness.at(-1) ?? 0,
      lastChecks: lastLateness.length,
      lastP99: percentile(lastLateness, 99)
    }) + "\n"
  )
  process.exit(0)
}

export const runBaseline = async (target: string, n: number, seconds: number, warmup: number): Promise<RunResult> => {
  const start = Date.now() + warmup * 1000
  const end = start + seconds * 1000
  const child = spawn("node_modules/.bin/node", ["bench/monitors-baseline.ts"], {
    env: { ...process.env, MODE: "baseline", N: String(n), TARGET: target, START: String(start), END: String(end) },
    stdio: ["ignore", "pipe", "inherit"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => output += chunk)
  await sleep(Math.max(0, start - Date.now()))
  const sampler = sample([child.pid!], undefined)
  await sleep(Math.max(0, end - Date.now()))
  const usage = sampler.stop()
  await new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const result = JSON.parse(output.trim().split("\n").at(-1)!) as {
    checks: number
    p50: number
    p99: number
    max: number
    lastChecks: number
    lastP99: number
  }
  return runResult("bare node (baseline)", { n, seconds, start, end }, result, [], {
    ...usage,
    xactPerSecond: 0,
    clusterRowsPerSecond: 0
  })
}

if (process.env.MODE === "baseline") void runBaselineChild()
