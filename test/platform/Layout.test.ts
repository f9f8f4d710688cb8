import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * One name per feature across the tree (README, "Architecture"): every folder under
 * `services/` is a feature with its tests in `test/<feature>/` (beside `test/support/` and the
 * ignored `test/artifacts/`), and the feature folders of
 * `schemas/`, `src/http/` and `src/entities/` carry the name of a `services/` feature.
 * (The import rules are checked by dependency-cruiser in `npm run check`.)
 */
const root = fileURLToPath(new URL("../..", import.meta.url))
const foldersOf = (dir: string) =>
  Fs.readdirSync(Path.join(root, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()

describe("layout", () => {
  const features = foldersOf("services")

  it("every feature of services/ has its tests in test/<feature>/", () => {
    expect(features.filter((feature) => !foldersOf("test").includes(feature))).toEqual([])
  })

  it("schemas/, src/http/, src/entities/ and test/ hold only folders named after a services/ feature", () => {
    const strays = ["schemas", "src/http", "src/entities", "test"].flatMap((tree) =>
      foldersOf(tree)
        .filter((folder) =>
          !features.includes(folder) && !(tree === "test" && ["support", "artifacts"].includes(folder))
        )
        .map((folder) => `${tree}/${folder}`)
    )
    expect(strays).toEqual([])
  })

  it("schemas/ has no loose files: each wire type sits in its feature's folder", () => {
    const loose = Fs.readdirSync(Path.join(root, "schemas")).filter((name) => name.endsWith(".ts"))
    expect(loose).toEqual([])
  })

  it("a *Rows.ts file names only its own feature's tables (others' come through their owner's relations)", () => {
    // A table's owner is the feature whose Rows files write it (INSERT, UPDATE, DELETE).
    const rowsFiles = features.flatMap((feature) =>
      Fs.readdirSync(Path.join(root, "services", feature))
        .filter((name) => name.endsWith("Rows.ts"))
        .map((name) => ({
          feature,
          file: `services/${feature}/${name}`,
          text: Fs.readFileSync(Path.join(root, "services", feature, name), "utf8")
        }))
    )
    const owners = new Map<string, Set<string>>()
    for (const { feature, text } of rowsFiles) {
      for (const [, table] of text.matchAll(/\b(?:INSERT INTO|UPDATE|DELETE FROM)\s+([a-z_]+)/g)) {
        owners.set(table, (owners.get(table) ?? new Set()).add(feature))
      }
    }
    expect(owners.size).toBeGreaterThan(40)
    expect([...owners].filter(([, by]) => by.size > 1).map(([table]) => table)).toEqual([])
    const foreign = rowsFiles.flatMap(({ feature, file, text }) =>
      [...text.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)/g)]
        .filter(([, table]) => owners.has(table) && !owners.get(table)!.has(feature))
        .map(([, table]) => `${file}: ${table}`)
    )
    expect(foreign).toEqual([])
  })
})
