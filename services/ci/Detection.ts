import type { CiConfig, ProjectType } from "../../schemas/ci/Ci.ts"

export interface DetectedProject {
  readonly projectType: Exclude<ProjectType, "auto">
  readonly install: string
  readonly test: string
}

/** The spec's auto-detection table, in order: the first row whose files all exist wins. */
const TABLE: ReadonlyArray<{ readonly files: ReadonlyArray<string> } & DetectedProject> = [
  { files: ["package.json", "pnpm-lock.yaml"], projectType: "nodejs", install: "pnpm install", test: "pnpm test" },
  { files: ["package.json", "yarn.lock"], projectType: "nodejs", install: "yarn install", test: "yarn test" },
  { files: ["package.json"], projectType: "nodejs", install: "npm ci", test: "npm test" },
  { files: ["go.mod"], projectType: "go", install: "go mod download", test: "go test ./..." },
  { files: ["requirements.txt"], projectType: "python", install: "pip install -r requirements.txt", test: "pytest" },
  { files: ["pyproject.toml"], projectType: "python", install: "pip install .", test: "pytest" },
  { files: ["Cargo.toml"], projectType: "rust", install: "cargo build", test: "cargo test" }
]

/** What detection looks for, for the message of a run that found nothing. */
export const DETECTION_FILES = "package.json, go.mod, requirements.txt, pyproject.toml or Cargo.toml"

/**
 * The project of a commit from the names of its top-level files (spec table, first match);
 * with an explicit `projectType`, that type's first row.
 */
export const detect = (projectType: ProjectType, files: ReadonlySet<string>): DetectedProject | undefined => {
  if (projectType !== "auto") {
    const rows = TABLE.filter((row) => row.projectType === projectType)
    // The type's own files decide the tool; without them, its plainest row (npm, pip -r).
    return rows.find((row) => row.files.every((file) => files.has(file))) ??
      (projectType === "nodejs" ? rows[rows.length - 1] : rows[0])
  }
  return TABLE.find((row) => row.files.every((file) => files.has(file)))
}

export interface PlannedJob {
  readonly name: "install" | "lint" | "build" | "test"
  readonly command: string
}

/**
 * The jobs of a run in order (GUIDE §14): `install`, then `lint` and `build` when set, then
 * `test`; an explicit command wins over detection. Undefined when there is nothing to run.
 */
export const planJobs = (config: CiConfig, files: ReadonlySet<string>): ReadonlyArray<PlannedJob> | undefined => {
  const detected = detect(config.projectType, files)
  const install = config.installCommand ?? detected?.install
  const test = config.testCommand ?? detected?.test
  if (install === undefined && test === undefined) return undefined
  const jobs: Array<PlannedJob> = []
  if (install !== undefined) jobs.push({ name: "install", command: install })
  if (config.lintCommand !== null) jobs.push({ name: "lint", command: config.lintCommand })
  if (config.buildCommand !== null) jobs.push({ name: "build", command: config.buildCommand })
  if (test !== undefined) jobs.push({ name: "test", command: test })
  return jobs
}
