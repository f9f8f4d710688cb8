import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: true,
    // Three on two cores: much of the run waits on timers, git and Postgres, not the CPU (see
    // docs/decisions.md, "Three test workers on two cores").
    maxWorkers: 3,
    // Test files share their worker's module graph (imported once per worker, not once per
    // file: that import was ~18% of the run). Each file builds its own app and database, and
    // a file that needs other settings passes them to its app, not through process.env.
    isolate: false
  }
})
