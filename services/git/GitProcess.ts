import { Data, Effect } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
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

/** How long a git command may run before it is killed (with every process it started). */
export const GIT_TIMEOUT_MS = 5 * 60_000

export interface SpawnedGit {
  readonly child: ChildProcessWithoutNullStreams
  /** Kills git and every process it started (its process group); a no-op once it exited. */
  readonly kill: () => void
  /** Resolves with the exit code (null when killed) once the process and its pipes closed. */
  readonly exited: Promise<number | null>
  /** Whether the timeout killed it. */
  readonly timedOut: () => boolean
}

/**
 * The one place the server starts git. Git runs in a process group of its own (`detached`),
 * so a kill reaches what it started too (hooks, `!` aliases, pack-objects under
 * upload-pack); it is killed when `timeoutMs` passes. The caller kills it when it stops
 * caring (interruption): `runGitWithCode` does, and so do streaming callers.
 */
export const spawnGit = (run: GitRun, timeoutMs: number = GIT_TIMEOUT_MS): SpawnedGit => {
  const child = spawn("git", [...run.args], {
    env: gitEnv(run.gitDir, run.env),
    cwd: run.gitDir,
    detached: true
  })
  if (run.nice !== undefined && child.pid !== undefined) {
    try {
      Os.setPriority(child.pid, run.nice)
    } catch {
      // Not permitted here: the process runs at normal priority.
    }
  }
  let timedOut = false
  const kill = () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
    try {
      process.kill(-child.pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  const timer = setTimeout(() => {
    timedOut = true
    kill()
  }, timeoutMs)
  const exited = new Promise<number | null>((resolve) => {
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve(code)
    })
    child.on("error", () => {
      clearTimeout(timer)
      resolve(null)
    })
  })
  // A child that exits before reading all of stdin makes the pipe fail: the exit code tells.
  child.stdin.on("error", () => undefined)
  return { child, kill, exited, timedOut: () => timedOut }
}

/** What a git command answered: its exit code (null when it could not start or was killed) and output. */
export interface GitOutcome {
  readonly code: number | null
  readonly stdout: Buffer
  readonly stderr: string
}

/**
 * Runs git to completion and answers its exit code and output, whatever the code (for
 * commands like `merge-tree` that exit 1 with a meaningful answer). Interruption kills it
 * with its process group; past `timeoutMs` it is killed and fails.
 */
export const runGitWithCode = (
  run: GitRun,
  options?: { readonly timeoutMs?: number | undefined }
): Effect.Effect<GitOutcome, GitCommandError> =>
  Effect.callback<GitOutcome, GitCommandError>((resume) => {
    const timeoutMs = options?.timeoutMs ?? GIT_TIMEOUT_MS
    const git = spawnGit(run, timeoutMs)
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    let startError: Error | undefined
    git.child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    git.child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    git.child.on("error", (error) => void (startError = error))
    void git.exited.then((code) => {
      if (git.timedOut()) {
        resume(Effect.fail(new GitCommandError({ args: run.args, code, stderr: `timed out after ${timeoutMs} ms` })))
      } else if (startError !== undefined) {
        resume(Effect.fail(new GitCommandError({ args: run.args, code: null, stderr: String(startError) })))
      } else {
        resume(Effect.succeed({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") }))
      }
    })
    const stdin = run.stdin
    if (stdin === undefined) git.child.stdin.end()
    else if (typeof stdin === "string" || stdin instanceof Uint8Array) git.child.stdin.end(stdin)
    else {
      stdin.on("error", (error) => git.child.stdin.destroy(error))
      stdin.pipe(git.child.stdin)
    }
    // Interrupted: kill the whole group and wait for it, so nothing outlives the fiber.
    return Effect.promise(() => {
      git.kill()
      return git.exited
    })
  })

/** Runs git to completion and returns stdout; a non-zero exit fails with its stderr. */
export const runGit = (
  run: GitRun,
  options?: { readonly timeoutMs?: number | undefined }
): Effect.Effect<Buffer, GitCommandError> =>
  Effect.flatMap(runGitWithCode(run, options), (outcome) =>
    outcome.code === 0
      ? Effect.succeed(outcome.stdout)
      : Effect.fail(new GitCommandError({ args: run.args, code: outcome.code, stderr: outcome.stderr })))

/** `runGit` for text output. */
export const gitText = (run: GitRun) => Effect.map(runGit(run), (out) => out.toString("utf8"))
