import { createHash } from "node:crypto"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import type { ProjectType } from "../../schemas/ci/Ci.ts"

type Project = Exclude<ProjectType, "auto">

/**
 * What a project type caches (the spec: "node_modules and the pnpm store (Node.js), the Go
 * module cache, pip cache and .venv (Python), cargo directory and target (Rust)"), as paths
 * inside the sandbox relative to `/` (the workspace is `/workspace`, HOME `/home/ci`).
 * Node also keeps npm's and yarn's download caches: `npm ci` deletes `node_modules` first,
 * so only the download cache makes its next install faster.
 */
export const CACHE_PATHS: Readonly<Record<Project, ReadonlyArray<string>>> = {
  nodejs: [
    "workspace/node_modules",
    "home/ci/.local/share/pnpm/store",
    "home/ci/.npm",
    "home/ci/.cache/yarn"
  ],
  go: ["home/ci/go/pkg/mod"],
  python: ["home/ci/.cache/pip", "workspace/.venv"],
  rust: ["home/ci/.cargo", "workspace/target"]
}

/** Never archived: npm's per-run debug logs. */
export const CACHE_EXCLUDES: ReadonlyArray<string> = ["home/ci/.npm/_logs"]

/** The lockfiles whose content keys a project type's cache, in a fixed order. */
export const LOCKFILES: Readonly<Record<Project, ReadonlyArray<string>>> = {
  nodejs: ["package-lock.json", "pnpm-lock.yaml", "yarn.lock"],
  go: ["go.sum"],
  python: ["requirements.txt", "poetry.lock"],
  rust: ["Cargo.lock"]
}

export interface CachePlan {
  readonly projectType: Project
  /** `<projectType>-<hash of the lockfiles>`: a changed lockfile is a new key. */
  readonly key: string
  readonly lockfiles: ReadonlyArray<string>
  readonly paths: ReadonlyArray<string>
}

/**
 * The cache of a freshly exported workspace (read before any job ran), or undefined without
 * a lockfile. Only regular files count: a committed symlink named like a lockfile is ignored,
 * so the host never reads through it.
 */
export const cachePlan = async (projectType: Project, workspace: string): Promise<CachePlan | undefined> => {
  const hash = createHash("sha256").update(projectType)
  const found: Array<string> = []
  for (const name of LOCKFILES[projectType]) {
    const path = Path.join(workspace, name)
    const stat = await FsP.lstat(path).catch(() => undefined)
    if (stat === undefined || !stat.isFile()) continue
    found.push(name)
    hash.update(`\0${name}\0`).update(await FsP.readFile(path))
  }
  if (found.length === 0) return undefined
  return {
    projectType,
    key: `${projectType}-${hash.digest("hex").slice(0, 40)}`,
    lockfiles: found,
    paths: CACHE_PATHS[projectType]
  }
}
