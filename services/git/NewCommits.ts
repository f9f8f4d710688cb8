import { Effect } from "effect"
import { type GitCommandError, runGit } from "./GitProcess.ts"

/** A new commit as `git rev-list --parents --header` shows it: id, parents and the object rebuilt. */
export interface WalkedCommit {
  readonly sha: string
  readonly parents: ReadonlyArray<string>
  /**
   * The commit object rebuilt from the walk (headers verbatim, message lines un-indented).
   * Git strips trailing spaces from message lines there, so a rebuilt object may differ
   * from the stored one: a signature that fails on it is checked again on `cat-file`'s bytes.
   */
  readonly object: Buffer
}

/** Parses one record of `git rev-list --parents --header` output (without its NUL); undefined for an empty one. */
export const parseRecord = (record: Buffer): WalkedCommit | undefined => {
  const firstLine = record.indexOf(10)
  if (firstLine === -1) return undefined
  const [sha, ...parents] = record.subarray(0, firstLine).toString("utf8").split(" ")
  const rest = record.subarray(firstLine + 1)
  const headerEnd = rest.indexOf("\n\n")
  const headers = headerEnd === -1 ? rest : rest.subarray(0, headerEnd + 1)
  const message = headerEnd === -1 ? "" : rest.subarray(headerEnd + 2).toString("utf8")
  const lines = message.endsWith("\n") ? message.slice(0, -1).split("\n") : message.split("\n")
  const body = message === ""
    ? ""
    : lines.map((line) => `${line.startsWith("    ") ? line.slice(4) : line}\n`).join("")
  return {
    sha,
    parents,
    object: headerEnd === -1 ? Buffer.from(headers) : Buffer.concat([headers, Buffer.from(`\n${body}`, "utf8")])
  }
}

/** Parses `git rev-list --parents --header` output (NUL-terminated records). */
export const parseWalk = (out: Buffer): ReadonlyArray<WalkedCommit> => {
  const commits: Array<WalkedCommit> = []
  let at = 0
  while (at < out.length) {
    let end = out.indexOf(0, at)
    if (end === -1) end = out.length
    const commit = parseRecord(out.subarray(at, end))
    at = end + 1
    if (commit !== undefined) commits.push(commit)
  }
  return commits
}

/** The commits `tip` adds that no ref of the repository reaches, newest first, at most `limit`. */
export const walkNewCommits = (
  dir: string,
  env: Readonly<Record<string, string>>,
  tip: string,
  limit?: number
): Effect.Effect<ReadonlyArray<WalkedCommit>, GitCommandError> =>
  runGit({
    gitDir: dir,
    env,
    args: [
      "rev-list",
      "--parents",
      "--header",
      ...(limit === undefined ? [] : [`--max-count=${limit}`]),
      tip,
      "--not",
      "--all"
    ]
  }).pipe(Effect.map(parseWalk))

const AUTHOR = /^author (.*?) <([^>]*)> (\d+) [+-]\d{4}$/m

/** Author, date and message of a walked commit, as a push event lists it. */
export const describeCommit = (commit: WalkedCommit) => {
  const text = commit.object.toString("utf8")
  const headerEnd = text.indexOf("\n\n")
  const headers = headerEnd === -1 ? text : text.slice(0, headerEnd)
  const author = AUTHOR.exec(headers)
  return {
    sha: commit.sha,
    message: headerEnd === -1 ? "" : text.slice(headerEnd + 2).trimEnd(),
    author: { name: author?.[1] ?? "", email: author?.[2] ?? "" },
    timestamp: new Date(author === null ? 0 : Number(author[3]) * 1000).toISOString()
  }
}
