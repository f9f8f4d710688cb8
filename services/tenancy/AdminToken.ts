import { Effect, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { randomBase62 } from "../platform/Ids.ts"

/**
 * The admin bearer: `ADMIN_TOKEN` when set, else the one saved in `DATA_DIR/admin-token`,
 * else a new one written there (0600). `generated` tells the launcher to print it once.
 */
export const loadOrCreateAdminToken = (dataDir: string, fromEnv: Option.Option<Redacted.Redacted>) =>
  Effect.sync(() => {
    if (Option.isSome(fromEnv)) return { token: fromEnv.value, generated: false }
    const file = Path.join(dataDir, "admin-token")
    if (Fs.existsSync(file)) {
      return { token: Redacted.make(Fs.readFileSync(file, "utf8").trim()), generated: false }
    }
    Fs.mkdirSync(dataDir, { recursive: true })
    const token = `adm_${randomBase62(40)}`
    Fs.writeFileSync(file, token + "\n", { mode: 0o600 })
    return { token: Redacted.make(token), generated: true }
  })
