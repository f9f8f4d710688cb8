import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import { createRequire } from "node:module"

/** The bucket s3rver is started with. */
export const BUCKET = "canopy-test"

/**
 * Runs s3rver in a child Node with `--openssl-legacy-provider`: s3rver 3.7 builds
 * ListObjectsV2 continuation tokens with DES, which OpenSSL 3 only offers from
 * the legacy provider (without it every truncated page is a 500).
 */
export const startS3rver = (directory: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly child: ChildProcess.ChildProcess; readonly port: number }, Error>((resume) => {
      const child = ChildProcess.spawn(process.execPath, ["--openssl-legacy-provider", "-e", S3RVER_SCRIPT], {
        env: {
          ...process.env,
          S3RVER_MODULE: createRequire(import.meta.url).resolve("s3rver"),
          S3RVER_DIR: directory,
          S3RVER_BUCKET: BUCKET
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stderr.on("data", (data) => stderr += String(data))
      child.stdout.on("data", (data) => {
        stdout += String(data)
        const match = /^listening (\d+)$/m.exec(stdout)
        if (match) resume(Effect.succeed({ child, port: Number(match[1]) }))
      })
      child.on("exit", (code) => resume(Effect.fail(new Error(`s3rver exited with ${code}: ${stderr}`))))
      return Effect.sync(() => child.kill())
    }),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill()
      })
  )

const S3RVER_SCRIPT = `
const S3rver = require(process.env.S3RVER_MODULE)
const server = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory: process.env.S3RVER_DIR,
  configureBuckets: [{ name: process.env.S3RVER_BUCKET }]
})
server.run().then(({ port }) => console.log("listening " + port))
process.on("SIGTERM", () => server.close().finally(() => process.exit(0)))
`
