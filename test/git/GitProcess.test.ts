import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { runGit, runGitWithCode } from "../../services/git/GitProcess.ts"
import { eventually } from "../support/wait.ts"

/** A bare repository whose `slow` alias starts a shell that starts `sleep` (a process tree), noting sleep's pid. */
const slowRepo = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-gitprocess-"))
  execFileSync("git", ["init", "-q", "--bare", dir])
  const pidFile = Path.join(dir, "sleep.pid")
  const args = ["-c", `alias.slow=!sh -c 'sleep 60 & echo $! > ${pidFile}; wait'`, "slow"]
  return { dir, pidFile, args }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pidOf = (pidFile: string) =>
  Effect.map(
    eventually(
      "the grandchild's pid",
      Effect.sync(() => Fs.existsSync(pidFile) ? Fs.readFileSync(pidFile, "utf8").trim() : ""),
      (text) => /^\d+$/.test(text)
    ),
    Number
  )

/** One spawner for every git command: interruption and timeouts kill git and everything it started. */
describe("git subprocesses", () => {
  for (const [name, run] of [["runGit", runGit], ["runGitWithCode", runGitWithCode]] as const) {
    it.live(`${name}: an interrupted command is killed with its whole process group`, () =>
      Effect.gen(function*() {
        const repo = slowRepo()
        const fiber = yield* Effect.forkChild(run({ gitDir: repo.dir, args: repo.args }))
        const sleeper = yield* pidOf(repo.pidFile)
        expect(alive(sleeper)).toBe(true)
        yield* Fiber.interrupt(fiber)
        yield* eventually("the grandchild killed", Effect.sync(() => alive(sleeper)), (up) => !up)
        Fs.rmSync(repo.dir, { recursive: true, force: true })
      }))
  }

  it.live("a command past its timeout fails and is killed with its whole process group", () =>
    Effect.gen(function*() {
      const repo = slowRepo()
      const fiber = yield* Effect.forkChild(
        Effect.flip(runGit({ gitDir: repo.dir, args: repo.args }, { timeoutMs: 1500 }))
      )
      const sleeper = yield* pidOf(repo.pidFile)
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("GitCommandError")
      expect(error.stderr).toContain("timed out")
      yield* eventually("the grandchild killed", Effect.sync(() => alive(sleeper)), (up) => !up)
      Fs.rmSync(repo.dir, { recursive: true, force: true })
    }))

  it.live("runGitWithCode answers non-zero exits with their output", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-gitprocess-"))
      execFileSync("git", ["init", "-q", "--bare", dir])
      const outcome = yield* runGitWithCode({ gitDir: dir, args: ["rev-parse", "--verify", "nope"] })
      expect(outcome.code).toBe(128)
      expect(outcome.stderr).toContain("fatal")
      expect(yield* Effect.flip(runGit({ gitDir: dir, args: ["rev-parse", "--verify", "nope"] })))
        .toMatchObject({ _tag: "GitCommandError", code: 128 })
      Fs.rmSync(dir, { recursive: true, force: true })
    }))
})
