import { run } from "./git-repo.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
/** The real-history case (express had 6,413 commits, 19 branches, 304 tags of which 50 annotated). */
export const HISTORY = {
  commits: env("HISTORY_COMMITS", 5000),
  branches: env("HISTORY_BRANCHES", 100),
  tags: env("HISTORY_TAGS", 1000),
  /** One tag in this many is annotated. */
  annotatedEvery: env("HISTORY_ANNOTATED_EVERY", 5)
}
/** Commits of each side branch; the rest of `commits` is `main`. */
const BRANCH_COMMITS = 8
/** Commits on `main` (and tags on them) held back from the first push, for the incremental push and fetch. */
export const LATE_COMMITS = 20
export const LATE_TAGS = 10

/**
 * A history shaped like a real project's, with `git fast-import`: a long `main` editing a few
 * of 300 files per commit, `branches` side branches of a few commits forking off it along the
 * way (release lines, topics), and `tags` tags spread along `main`, one in `annotatedEvery`
 * annotated. `LATE_COMMITS` commits at the top of main and `LATE_TAGS` tags on them are
 * pushed only in the second push.
 */
export const generateHistory = async (gitDir: string, gitEnv: NodeJS.ProcessEnv) => {
  const { annotatedEvery, branches, tags } = HISTORY
  const mainCommits = Math.max(LATE_COMMITS + 10, HISTORY.commits - branches * BRANCH_COMMITS)
  let seed = 7
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const word = () => Math.floor(random() * 1e9).toString(36)
  const paths = Array.from({ length: 300 }, (_, i) => `lib/m${i % 12}/file-${i}.js`)
  const contents = paths.map(() => Array.from({ length: 30 }, () => `${word()} ${word()} ${word()}`))
  const chunks: Array<string> = []
  const data = (text: string) => chunks.push(`data ${Buffer.byteLength(text)}\n${text}\n`)
  let mark = 0
  let time = 1_600_000_000
  const commit = (ref: string, message: string, from: string | undefined, edits: number) => {
    mark++
    time += 3600
    chunks.push(`commit ${ref}\nmark :${mark}\n`)
    chunks.push(`author Dev <dev@example.com> ${time} +0000\ncommitter Dev <dev@example.com> ${time} +0000\n`)
    data(message)
    if (from !== undefined) chunks.push(`from ${from}\n`)
    const files = from === undefined ?
      paths.map((_, i) => i) :
      Array.from({ length: edits }, () => Math.floor(random() * paths.length))
    for (const i of files) {
      contents[i][Math.floor(random() * contents[i].length)] = `${word()} ${word()} ${word()}`
      chunks.push(`M 100644 inline ${paths[i]}\n`)
      data(contents[i].join("\n") + "\n")
    }
    return `:${mark}`
  }
  const main: Array<string> = []
  for (let c = 0; c < mainCommits; c++) {
    main.push(commit("refs/heads/main", `change ${c}: ${word()}`, main[c - 1], 3))
  }
  const early = mainCommits - LATE_COMMITS
  for (let b = 0; b < branches; b++) {
    let head = main[Math.floor(((b + 1) * early) / (branches + 1))]
    for (let c = 0; c < BRANCH_COMMITS; c++) head = commit(`refs/heads/line-${b}`, `line ${b}: ${c}`, head, 2)
  }
  const tag = (name: string, target: string, index: number) => {
    if (index % annotatedEvery === 0) {
      chunks.push(`tag ${name}\nfrom ${target}\ntagger Dev <dev@example.com> ${time} +0000\n`)
      data(`release ${name}\n`)
    } else {
      chunks.push(`reset refs/tags/${name}\nfrom ${target}\n\n`)
    }
  }
  for (let t = 0; t < tags; t++) tag(`v${t}`, main[Math.floor((t * early) / tags)], t)
  for (let t = 0; t < LATE_TAGS; t++) tag(`late-${t}`, main[early + Math.floor((t * LATE_COMMITS) / LATE_TAGS)], t)
  await run(["init", "-q", "--bare", gitDir], gitEnv)
  await run(["--git-dir", gitDir, "fast-import", "--quiet"], gitEnv, Buffer.from(chunks.join("")))
  await run(["--git-dir", gitDir, "repack", "-a", "-d", "-q"], gitEnv)
  return { mainCommits, lateRef: `main~${LATE_COMMITS}` }
}
