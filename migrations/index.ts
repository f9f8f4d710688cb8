import platform from "./0001_platform.ts"

/** Every migration, keyed `<id>_<name>`; the migrator applies the missing ones in order. */
export const migrations = {
  "0001_platform": platform
}
