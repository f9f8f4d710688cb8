import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"

/**
 * A generated repository of realistic shape, written with `git fast-import` into a bare
 * repository: `files` text files in nested folders, `commits` commits on `main` each
 * editing three files (so deltas form as they do in real histories), a few large binary
 * files along the way, and a `topic` branch of ten commits on top of `main` for the push
 * measurement. Deterministic apart from the binary content.
 */
export const generateRepository = async (
  gitDir: string,
  options: {
    readonly commits: number
    readonly files: number
    readonly largeFiles: number
    readonly env: NodeJS.ProcessEnv
  }
) => {
  let seed = 42
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const word = () => Math.floor(random() * 1e9).toString(36)
  const line = () => Array.from({ length: 8 }, word).join(" ")
  const paths = Array.from({ length: options.files }, (_, i) => `src/m${i % 20}/d${i % 7}/file-${i}.ts`)
  const contents = paths.map(() => Array.from({ length: 40 }, line))
  const chunks: Array<Buffer> = []
  const data = (bytes: Buffer | string) => {
    const buffer = typeof bytes === "string" ? Buffer.from(bytes) : bytes
    chunks.push(Buffer.from(`data ${buffer.length}\n`), buffer, Buffer.from("\n"))
  }
  let mark = 0
  let time = 1_700_000_000
  const commit = (ref: string, message: string, changes: Array<[string, Buffer | string]>, from?: string) => {
    mark++
    time += 600
    chunks.push(Buffer.from(`commit ${ref}\nmark :${mark}\nauthor Bench <bench@example.com> ${time} +0000\n`))
    chunks.push(Buffer.from(`committer Bench <bench@example.com> ${time} +0000\n`))
    data(message)
    if (from !== undefined) chunks.push(Buffer.from(`from ${from}\n`))
    for (const [path, content] of changes) {
      chunks.push(Buffer.from(`M 100644 inline ${path}\n`))
      data(content)
    }
    return `:${mark}`
  }
  const edit = (): [string, string] => {
    const i = Math.floor(random() * paths.length)
    contents[i][Math.floor(random() * contents[i].length)] = line()
    contents[i].push(line())
    return [paths[i], contents[i].join("\n") + "\n"]
  }
  let head = commit("refs/heads/main", "initial import", paths.map((path, i) => [path, contents[i].join("\n") + "\n"]))
  const largeEvery = Math.max(1, Math.floor(options.commits / (options.largeFiles + 1)))
  for (let c = 1; c < options.commits; c++) {
    const changes: Array<[string, Buffer | string]> = [edit(), edit(), edit()]
    if (c % largeEvery === 0 && c / largeEvery <= options.largeFiles) {
      changes.push([`assets/large-${c}.bin`, randomBytes(1024 * 1024 + Math.floor(random() * 1024 * 1024))])
    }
    head = commit("refs/heads/main", `change ${c}: ${word()} ${word()}`, changes, head)
  }
  let topic = head
  for (let c = 0; c < 10; c++) {
    const changes: Array<[string, Buffer | string]> = [edit(), edit()]
    if (c === 0) changes.push(["assets/topic.bin", randomBytes(512 * 1024)])
    topic = commit("refs/heads/topic", `topic ${c}`, changes, topic)
  }
  await run(["init", "-q", "--bare", gitDir], options.env)
  await run(["--git-dir", gitDir, "fast-import", "--quiet"], options.env, Buffer.concat(chunks))
  await run(["--git-dir", gitDir, "repack", "-a", "-d", "-q"], options.env)
  const count = await run(["--git-dir", gitDir, "count-objects", "-v"], options.env)
  return Number(/in-pack: (\d+)/.exec(count)?.[1] ?? 0)
}

/** A git environment isolated from the machine's configuration, with a home of its own and one identity. */
export const isolatedGitEnv = (home: string, name: string, email: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: home,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: name,
  GIT_AUTHOR_EMAIL: email,
  GIT_COMMITTER_NAME: name,
  GIT_COMMITTER_EMAIL: email
})

/** Runs a command and resolves with its stdout; rejects with its stderr on failure. */
export const runCommand = (
  command: string,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv,
  input?: Buffer,
  cwd?: string
) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(command, args, { env, cwd })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    child.on("close", (code) =>
      code === 0
        ? resolve(Buffer.concat(out).toString("utf8"))
        : reject(new Error(`${command} ${args.join(" ")}: ${Buffer.concat(err).toString("utf8")}`)))
    child.stdin.end(input)
  })

/** Runs git and resolves with its stdout; rejects with its stderr on failure. */
export const run = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, input?: Buffer, cwd?: string) =>
  runCommand("git", args, env, input, cwd)
