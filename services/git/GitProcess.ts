import { Data, Effect } from "effect"
import { spawn } from "node:child_process"
import * as Os from "node:os"
import type { Readable } from "node:stream"

/** A `git` command that exited non-zero (or could not start). */
export class GitCommandError extends Data.TaggedError("GitCommandError")<{
  readonly args: ReadonlyArray<string>
  readonly code: number | null
  readonly stderr: string
}> {
  override get message() {
    return `git ${this.args[0] ?? ""} failed (${this.code}): ${this.stderr.trim().slice(0, 500)}`
  }
}

export interface GitRun {
  /** Run inside this folder (a bare repository: it becomes `GIT_DIR`). */
  readonly gitDir: string
  readonly args: ReadonlyArray<string>
  /** Extra environment, e.g. the quarantine object directory of a push. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Bytes or a stream piped to stdin; stdin is closed at once without it. */
  readonly stdin?: Uint8Array | string | Readable | undefined
  /** Niceness for heavy work (`GitWork`): the process runs below the server's priority. */
  readonly nice?: number | undefined
}

/**
 * The environment every git command of the server runs with: never the machine's or the
 * user's configuration, never a prompt.
 */
export const gitEnv = (gitDir: string, extra?: Readonly<Record<string, string>>): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: gitDir,
  GIT_DIR: gitDir,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  LANG: "C",
  ...extra
})

/** Runs git to completion and returns stdout; a non-zero exit fails with its stderr. */
export const runGit = (run: GitRun): Effect.Effect<Buffer, GitCommandError> =>
  Effect.callback<Buffer, GitCommandError>((resume, signal) => {
    const child = spawn("git", [...run.args], { env: gitEnv(run.gitDir, run.env), cwd: run.gitDir, signal })
    if (run.nice !== undefined && child.pid !== undefined) {
      try {
        Os.setPriority(child.pid, run.nice)
      } catch {
        // Not permitted here: the process runs at normal priority.
      }
    }
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    // A child that exits before reading all of stdin makes the pipe fail: the exit code tells.
    child.stdin.on("error", () => undefined)
    child.on(
      "error",
      (error) => resume(Effect.fail(new GitCommandError({ args: run.args, code: null, stderr: String(error) })))
    )
    child.on("close", (code) => {
      const stderr = Buffer.concat(err).toString("utf8")
      resume(
        code === 0
          ? Effect.succeed(Buffer.concat(out))
          : Effect.fail(new GitCommandError({ args: run.args, code, stderr }))
      )
    })
    const stdin = run.stdin
    if (stdin === undefined) child.stdin.end()
    else if (typeof stdin === "string" || stdin instanceof Uint8Array) child.stdin.end(stdin)
    else {
      stdin.on("error", (error) => child.stdin.destroy(error))
      stdin.pipe(child.stdin)
    }
  })

/** `runGit` for text output. */
export const gitText = (run: GitRun) => Effect.map(runGit(run), (out) => out.toString("utf8"))
