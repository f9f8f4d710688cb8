/**
 * `npm run bench:ai`: the time Canopy adds around the model in an AI review (GUIDE §15):
 * diff assembly, prompt, the provider call's own overhead, parsing, and posting the inline
 * comments, on pull requests of 10, 200 and 2,000 changed files, against a loopback
 * OpenAI-compatible stub that answers at once with ten suggestions.
 *
 * Per size: a first review (timed apart: cold), then `ROUNDS` manual reviews (default 15),
 * each timed by the server from its claim to its `ai/review` status, per phase (the line
 * `services/ai/ReviewPhases.ts` logs; `start` overlaps `diff` and `prompt`), the calls and
 * the largest prompt sent (estimated tokens, against the budget). Baseline, in
 * the same run: the same request bodies posted straight to the stub from this process (the
 * floor of any model call), so the ratio is the review's time over the bare calls. Goal:
 * under 200 ms at 200 files, and no prompt over the budget.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { PHASES } from "../services/ai/ReviewPhases.ts"
import { DEFAULT_TOKEN_BUDGET, estimateTokens } from "../services/ai/ReviewPrompt.ts"
import { percentile, printTable, startCanopyOnEmbeddedPostgres } from "./support.ts"

const ROUNDS = Number(process.env.ROUNDS || 15)
const SIZES = (process.env.SIZES || "10,200,2000").split(",").map(Number)
const LINES = 20
// Each review's suggestions go on another line (earlier reviews' lines are not spoken about again).
if (ROUNDS + 1 > LINES) throw new Error(`ROUNDS must be below ${LINES}`)

/** The stub: answers at once with ten suggestions on the files it was shown. */
const startStub = async () => {
  const state = { round: 0, prompts: [] as Array<string>, bodies: [] as Array<string> }
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      const body = JSON.parse(text)
      const prompt = body.messages.map((m: any) => m.content).join("\n")
      state.prompts.push(prompt)
      state.bodies.push(text)
      const paths = [...prompt.matchAll(/^### (\S+) \(/gm)].map((m) => m[1]).slice(0, 10)
      const line = (state.round % LINES) + 1
      const answer = {
        summary: "Bench review.",
        overallSentiment: "neutral",
        suggestions: paths.map((path) => ({
          path,
          startLine: line,
          endLine: line,
          severity: "warning",
          category: "bug",
          title: `Check line ${line}`,
          body: "Bench suggestion.",
          replacement: `export const changed${line} = ${line}`
        }))
      }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({
        choices: [{ index: 0, message: { role: "assistant", content: JSON.stringify(answer) }, finish_reason: "stop" }],
        usage: { prompt_tokens: estimateTokens(prompt), completion_tokens: 500 }
      }))
    })
  })
  server.keepAliveTimeout = 120_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }
}

/** `fetch`, once more when a kept-alive connection was closed by the server meanwhile. */
const fetchAgain = (url: string, init: RequestInit) => fetch(url, init).catch(() => fetch(url, init))

const git = (cwd: string, args: ReadonlyArray<string>) =>
  execFileSync("git", args, {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "B",
      GIT_AUTHOR_EMAIL: "b@x",
      GIT_COMMITTER_NAME: "B",
      GIT_COMMITTER_EMAIL: "b@x"
    },
    maxBuffer: 1 << 30
  }).toString()

interface Timing {
  readonly total: number
  readonly phases: Record<string, number>
}

/** The per-phase timings a finished review logs (`services/ai/ReviewPhases.ts`), by review id. */
const watchTimings = (stdout: NodeJS.ReadableStream) => {
  const seen = new Map<string, Timing>()
  let buffered = ""
  stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8")
    const lines = buffered.split("\n")
    buffered = lines.pop()!
    for (const line of lines) {
      const match = /AI review (air_\w+) \w+ in ([\d.]+) ms \(([^)]*)\)/.exec(line)
      if (match === null) continue
      const phases = Object.fromEntries(
        match[3].split(", ").map((part) => {
          const [name, value] = part.split(" ")
          return [name, Number(value)]
        })
      )
      seen.set(match[1], { total: Number(match[2]), phases })
    }
  })
  return {
    /** The review's timing, once its line is out (just after its status). */
    of: async (id: string) => {
      const deadline = Date.now() + 30_000
      while (!seen.has(id)) {
        if (Date.now() > deadline) throw new Error(`no timing logged for ${id}`)
        await new Promise((r) => setTimeout(r, 2))
      }
      return seen.get(id)!
    }
  }
}

const main = async () => {
  const stub = await startStub()
  const canopy = await startCanopyOnEmbeddedPostgres({ OUTBOUND_ALLOW_PRIVATE: "true" })
  const timings = watchTimings(canopy.canopy.stdout!)
  const work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-ai-"))
  try {
    await canopy.admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise" })
    await canopy.admin("/orgs/bench/users", { username: "bencher", email: "b@x", role: "owner" })
    const key = (await canopy.admin("/orgs/bench/keys", { username: "bencher" })).key as string
    const api = (method: string, path: string, body?: unknown) =>
      fetchAgain(`${canopy.base}/api/v1/code${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => undefined) as any }))
    await api("POST", "/repos", { name: "r" })
    const remote = `${canopy.base.replace("http://", "http://x:" + key + "@")}/bench/r.git`
    git(work, ["init", "-q", "-b", "main", "."])
    Fs.writeFileSync(Path.join(work, "README.md"), "bench\n")
    git(work, ["add", "-A"])
    git(work, ["commit", "-q", "-m", "initial"])
    git(work, ["push", "-q", remote, "main"])
    await api("PATCH", "/repos/bench/r/ai/settings", {
      enabled: true,
      apiKey: "sk-bench",
      baseUrl: stub.url,
      autoReviewPRs: false
    })
    const rows: Array<Record<string, string | number>> = []
    for (const size of SIZES) {
      git(work, ["checkout", "-q", "-B", `files-${size}`, "main"])
      for (let i = 0; i < size; i++) {
        const dir = Path.join(work, "src", `m${Math.floor(i / 100)}`)
        Fs.mkdirSync(dir, { recursive: true })
        Fs.writeFileSync(
          Path.join(dir, `f${i}.ts`),
          Array.from({ length: LINES }, (_, l) => `export const v${l + 1} = ${i * LINES + l}`).join("\n") + "\n"
        )
      }
      git(work, ["add", "-A"])
      git(work, ["commit", "-q", "-m", `${size} files`])
      git(work, ["push", "-q", remote, `files-${size}`])
      const pr = await api("POST", "/repos/bench/r/pulls", {
        title: `${size} files`,
        body: "",
        sourceBranch: `files-${size}`
      })
      const number = pr.body.number as number
      const reviews: Array<Timing> = []
      const waits: Array<number> = []
      const baseline: Array<number> = []
      let calls = 0
      let maxTokens = 0
      let first = 0
      // Round 0 is the pull request's first review (cold: nothing of it cached or compiled yet), not in the percentiles.
      for (let round = 0; round <= ROUNDS; round++) {
        stub.state.round = round
        const before = stub.state.prompts.length
        const triggered = await api("POST", `/repos/bench/r/pulls/${number}/ai-review`)
        if (triggered.status !== 202) throw new Error(`trigger: ${triggered.status} ${JSON.stringify(triggered.body)}`)
        // Finished once its timing is logged (no polling that would compete with the review).
        const timing = await timings.of(triggered.body.id)
        const review = (await api("GET", `/repos/bench/r/pulls/${number}/ai-review`)).body
        if (review.id !== triggered.body.id || review.status !== "completed") {
          throw new Error(`review not completed: ${review.status} ${review.error}`)
        }
        const sent = stub.state.bodies.slice(before)
        calls = sent.length
        for (const prompt of stub.state.prompts.slice(before)) maxTokens = Math.max(maxTokens, estimateTokens(prompt))
        if (round === 0) {
          first = timing.total
          continue
        }
        reviews.push(timing)
        waits.push(Date.parse(review.startedAt) - Date.parse(review.createdAt))
        // Baseline: the same request bodies posted straight to the stub, one after another.
        const t0 = performance.now()
        for (const body of sent) {
          await fetchAgain(`${stub.url}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body
          }).then((r) => r.text())
        }
        baseline.push(performance.now() - t0)
      }
      const p = (values: ReadonlyArray<number>, at: number) =>
        Number(percentile([...values].sort((a, b) => a - b), at).toFixed(1))
      const total = reviews.map((r) => r.total)
      const bare = p(baseline, 50)
      rows.push({
        "files": size,
        "review p50": p(total, 50),
        "review p99": p(total, 99),
        "bare calls p50": bare,
        "added p50": Number((p(total, 50) - bare).toFixed(1)),
        "ratio": Number((p(total, 50) / Math.max(bare, 0.1)).toFixed(1)),
        ...Object.fromEntries(PHASES.map((phase) => [`${phase} p50`, p(reviews.map((r) => r.phases[phase]), 50)])),
        "queued p50": p(waits, 50),
        "first review": Number(first.toFixed(1)),
        "calls": calls,
        "largest prompt": maxTokens,
        "budget": DEFAULT_TOKEN_BUDGET,
        "within": maxTokens <= DEFAULT_TOKEN_BUDGET ? "yes" : "NO"
      })
      console.error(`done: ${size} files`)
    }
    printTable(rows)
    console.log(
      `ms; ${ROUNDS} manual reviews per size after its first (first review: its time); ` +
        `review: claim to the ai/review status, from the server's log; ` +
        `bare calls: the same request bodies posted straight to the stub; added: review - bare calls; ` +
        `queued: created to started; largest prompt: estimated tokens of a call's messages`
    )
  } finally {
    Fs.rmSync(work, { recursive: true, force: true })
    stub.server.close()
    await canopy.close()
  }
}

await main()
