import { createHash } from "node:crypto"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import * as Zlib from "node:zlib"

/**
 * Writes a commit object as a loose object, in process: what `git commit-tree` writes for
 * a tree, parents, author, committer and message, without starting a git process. Only
 * for identities git would keep as given and dates with an explicit offset; otherwise
 * `undefined`, and the caller asks `git commit-tree` (which cleans odd names up).
 */

export interface CommitPerson {
  readonly name: string
  readonly email: string
  /** ISO 8601 with `Z` or `±hh:mm`. */
  readonly date?: string | undefined
}

// git strips these from both ends of a name or e-mail ("crud") and refuses `<`, `>` and newlines.
const CRUD = /^[\s.,:;<>"\\']|[\s.,:;<>"\\']$/
const plain = (value: string) => value !== "" && !/[<>\n\0]/.test(value) && !CRUD.test(value)

/** `Name <email> <seconds> <±hhmm>`, or undefined when git should format it. */
const signature = (person: CommitPerson) => {
  if (person.date === undefined || !plain(person.name) || !plain(person.email)) return undefined
  const offset = /(Z|[+-]\d{2}:\d{2})$/.exec(person.date)?.[1]
  const millis = Date.parse(person.date)
  if (offset === undefined || Number.isNaN(millis)) return undefined
  const zone = offset === "Z" ? "+0000" : offset.replace(":", "")
  return `${person.name} <${person.email}> ${Math.floor(millis / 1000)} ${zone}`
}

/** Writes the commit into `objectsDir`; its id, or undefined when git has to write it. */
export const writeLooseCommit = async (objectsDir: string, input: {
  readonly tree: string
  readonly parents: ReadonlyArray<string>
  readonly message: string
  readonly author: CommitPerson
  readonly committer: CommitPerson
}) => {
  const author = signature(input.author)
  const committer = signature(input.committer)
  if (author === undefined || committer === undefined) return undefined
  const message = input.message.endsWith("\n") ? input.message : `${input.message}\n`
  const content = Buffer.from(
    `tree ${input.tree}\n${input.parents.map((parent) => `parent ${parent}\n`).join("")}` +
      `author ${author}\ncommitter ${committer}\n\n${message}`
  )
  const object = Buffer.concat([Buffer.from(`commit ${content.length}\0`), content])
  const sha = createHash("sha1").update(object).digest("hex")
  const dir = Path.join(objectsDir, sha.slice(0, 2))
  await FsP.mkdir(dir, { recursive: true })
  await FsP.writeFile(Path.join(dir, sha.slice(2)), Zlib.deflateSync(object, { level: 1 }))
  return sha
}
