/**
 * Part of `npm run bench:git`: what branch protection adds to a push. The same 100 commits,
 * each really signed with a gpg key a member registered, are pushed as a new branch
 * `feature/bench` into two fresh repositories: one without rules and one with three rules
 * matching the branch (`feature/**`, `feature/*`, `**`; signed commits and linear history
 * on). Rounds alternate the order; the medians are compared.
 *
 * Also the CPU per push (mean over the rounds, from /proc, 10 ms ticks): the server with the
 * git processes it ran, Postgres, and the pushing git client.
 *
 * Env: PROTECTION_ROUNDS (default 5), PROTECTION_COMMITS (default 100).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cpuMs, cpuMsWithChildren, postgresCpuMs } from "./cpu.ts"
import { run, runCommand } from "./git-repo.ts"

const ROUNDS = Number(process.env.PROTECTION_ROUNDS || 5)
const COMMITS = Number(process.env.PROTECTION_COMMITS || 100)

const exec = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) => runCommand(command, args, env)

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

export interface ProtectionBenchInput {
  readonly baseUrl: string
  readonly adminToken: string
  readonly org: string
  readonly dir: string
  readonly gitEnv: NodeJS.ProcessEnv
  readonly serverPid: number
  readonly pgDataDir: string
}

interface CpuSample {
  readonly server: number
  readonly postgres: number
  readonly client: number
}

/** One timed push: its wall time and the CPU it cost. */
interface Push {
  readonly ms: number
  readonly cpu: CpuSample
}

export const benchProtection = async (input: ProtectionBenchInput) => {
  const { adminToken, baseUrl, dir, org } = input
  const api = (method: string, path: string, body: unknown, token: string) =>
    fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then(async (response) => {
      const json = await response.json() as any
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
      return json
    })

  // A member with a registered gpg key; the owner creates repositories and rules.
  const gnupgHome = Path.join(dir, "gnupg")
  Fs.mkdirSync(gnupgHome, { mode: 0o700 })
  const gpgEnv = { PATH: process.env.PATH, GNUPGHOME: gnupgHome, LANG: "C" }
  await exec("gpg", [
    "--batch",
    "--passphrase",
    "",
    "--quick-gen-key",
    "Dev <dev@example.com>",
    "ed25519",
    "sign",
    "never"
  ], gpgEnv)
  const listing = await exec("gpg", ["--batch", "--with-colons", "--list-keys"], gpgEnv)
  const fingerprint = listing.split("\n").find((line) => line.startsWith("fpr:"))!.split(":")[9]
  const armored = await exec("gpg", ["--batch", "--armor", "--export", fingerprint], gpgEnv)
  await api("POST", `/api/v1/admin/orgs/${org}/users`, { username: "dev", email: "dev@example.com" }, adminToken)
  const { key: owner } = await api("POST", `/api/v1/admin/orgs/${org}/keys`, { username: "bench" }, adminToken)
  const { key: dev } = await api("POST", `/api/v1/admin/orgs/${org}/keys`, { username: "dev" }, adminToken)
  await api("POST", "/api/v1/user/gpg-keys", { armoredPublicKey: armored }, dev)

  // One base commit and COMMITS signed commits on top of it.
  const env = { ...input.gitEnv, GNUPGHOME: gnupgHome }
  const work = Path.join(dir, "protection-work")
  await run(["init", "-q", "-b", "main", work], env)
  const sign = ["-c", "gpg.program=gpg", "-c", `user.signingkey=${fingerprint}`]
  Fs.writeFileSync(Path.join(work, "base.txt"), "base\n")
  await run(["add", "-A"], env, undefined, work)
  await run([...sign, "commit", "-q", "-S", "-m", "base"], env, undefined, work)
  await run(["branch", "base"], env, undefined, work)
  const t0 = performance.now()
  for (let i = 0; i < COMMITS; i++) {
    Fs.writeFileSync(Path.join(work, `file-${i % 10}.txt`), `change ${i}\n`.repeat(20))
    await run(["add", "-A"], env, undefined, work)
    await run([...sign, "commit", "-q", "-S", "-m", `change ${i}`], env, undefined, work)
  }
  console.log(`\nsigned ${COMMITS} commits with gpg in ${(performance.now() - t0).toFixed(0)} ms`)

  const pushInto = async (name: string, rules: ReadonlyArray<object>) => {
    await api("POST", "/api/v1/code/repos", { name }, owner)
    const url = (key: string) => `${baseUrl.replace("http://", `http://git:${key}@`)}/${org}/${name}.git`
    await run(["-c", "credential.helper=", "push", "-q", url(owner), "base:refs/heads/main"], env, undefined, work)
    for (const rule of rules) await api("POST", `/api/v1/code/repos/${org}/${name}/branches/protection`, rule, owner)
    const cpu = (): CpuSample => ({
      server: cpuMsWithChildren(input.serverPid),
      postgres: postgresCpuMs(input.pgDataDir),
      client: cpuMsWithChildren(process.pid) - cpuMs(process.pid)
    })
    const before = cpu()
    const started = performance.now()
    await run(
      ["-c", "credential.helper=", "push", "-q", url(dev), "main:refs/heads/feature/bench"],
      env,
      undefined,
      work
    )
    const ms = performance.now() - started
    const after = cpu()
    return {
      ms,
      cpu: {
        server: after.server - before.server,
        postgres: after.postgres - before.postgres,
        client: after.client - before.client
      }
    }
  }
  const rules = [
    { branchPattern: "feature/**", requirePullRequest: false, requireSignedCommits: true },
    { branchPattern: "feature/*", requirePullRequest: false, requireLinearHistory: true, requireSignedCommits: true },
    { branchPattern: "**", requirePullRequest: false, requiredApprovals: 2 }
  ]
  const plain: Array<Push> = []
  const guarded: Array<Push> = []
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order so a warming server favours neither side.
    if (round % 2 === 0) {
      plain.push(await pushInto(`plain-${round}`, []))
      guarded.push(await pushInto(`guarded-${round}`, rules))
    } else {
      guarded.push(await pushInto(`guarded-${round}`, rules))
      plain.push(await pushInto(`plain-${round}`, []))
    }
  }
  await exec("gpgconf", ["--kill", "gpg-agent"], gpgEnv).catch(() => undefined)
  const row = (step: string, pushes: ReadonlyArray<Push>, baselineMs: number) => {
    const ms = median(pushes.map((push) => push.ms))
    const mean = (of: (cpu: CpuSample) => number) =>
      (pushes.reduce((total, push) => total + of(push.cpu), 0) / pushes.length).toFixed(1)
    return {
      step,
      "median ms": ms,
      rounds: String(ROUNDS),
      ratio: ms / baselineMs,
      "cpu ms server+git": mean((cpu) => cpu.server),
      "cpu ms postgres": mean((cpu) => cpu.postgres),
      "cpu ms client git": mean((cpu) => cpu.client)
    }
  }
  const plainMs = median(plain.map((push) => push.ms))
  return [
    row(`push ${COMMITS} signed commits, no rules`, plain, plainMs),
    row(`push ${COMMITS} signed commits, 3 rules (signed on)`, guarded, plainMs)
  ]
}
