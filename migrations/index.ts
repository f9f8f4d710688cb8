import platform from "./0001_platform.ts"
import monitoring from "./0002_monitoring.ts"
import webhooks from "./0008_webhooks.ts"

/** Every migration, keyed `<id>_<name>`; the migrator applies the missing ones in order. */
export const migrations = {
  "0001_platform": platform,
  "0002_monitoring": monitoring,
  "0008_webhooks": webhooks
}
