import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, expect, it } from "vitest"
import { processStartTime, sweepStaleWorkFolders, workFolderPrefix } from "../../services/ci/WorkFolders.ts"

const parent = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-workfolders-"))
afterEach(() => Fs.rmSync(parent, { recursive: true, force: true }))

it("sweeps the work folders of runners that are gone, never a live runner's", async () => {
  // A process that has exited: its pid is free (and if reused, its start time differs).
  const gone = spawnSync("true").pid!
  const live = `${workFolderPrefix()}abc123`
  const dead = `canopy-ci-${gone}.${processStartTime(process.pid)}-def456`
  const reused = `canopy-ci-${process.pid}.1-ghi789`
  // Another live process on the machine (this one's parent), with its real start time.
  const other = `canopy-ci-${process.ppid}.${processStartTime(process.ppid)}-jkl012`
  const unrelated = ["canopy-ci-XyZ123", "something-else"]
  for (const name of [live, dead, reused, other, ...unrelated]) {
    Fs.mkdirSync(Path.join(parent, name, "run-1", "workspace"), { recursive: true })
    Fs.writeFileSync(Path.join(parent, name, "run-1", "workspace", "file"), "x")
  }
  expect([...await sweepStaleWorkFolders(parent)].sort()).toEqual([dead, reused].sort())
  expect(Fs.readdirSync(parent).sort()).toEqual([live, other, ...unrelated].sort())
  expect(await sweepStaleWorkFolders(parent)).toEqual([])
})
