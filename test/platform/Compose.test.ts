import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"

/**
 * No Docker engine runs here, so docker-compose.yml and the Dockerfile are checked
 * statically: parsed, then held against each other and against the code they start.
 */

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")
const read = (file: string) => Fs.readFileSync(Path.join(root, file), "utf8")

interface Service {
  readonly image?: string
  readonly build?: string | { readonly context: string }
  readonly environment?: Record<string, string | number | boolean | null> | ReadonlyArray<string>
  readonly depends_on?: ReadonlyArray<string> | Record<string, { readonly condition?: string }>
  readonly healthcheck?: { readonly test: string | ReadonlyArray<string> }
  readonly ports?: ReadonlyArray<string>
  readonly command?: string | ReadonlyArray<string>
  readonly entrypoint?: string | ReadonlyArray<string>
}

interface Compose {
  readonly services: Record<string, Service>
  readonly volumes?: Record<string, unknown>
}

// `merge: true` resolves `<<: *anchor` the way Compose does.
const compose = parse(read("docker-compose.yml"), { merge: true }) as Compose
const services = compose.services
const canopyNames = ["canopy-1", "canopy-2"] as const

/** Environment as a name → string map, for both the map and the `NAME=value` list forms. */
const envOf = (service: Service): Record<string, string> => {
  const env = service.environment ?? {}
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((entry: string) => {
      const index = entry.indexOf("=")
      return index < 0 ? [entry, ""] : [entry.slice(0, index), entry.slice(index + 1)]
    }))
  }
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, String(value ?? "")]))
}

const dependsOn = (service: Service): Record<string, string | undefined> => {
  const deps = service.depends_on ?? []
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name: string) => [name, undefined]))
  return Object.fromEntries(Object.entries(deps).map(([name, dep]) => [name, dep.condition]))
}

const commandText = (service: Service): string =>
  [service.entrypoint, service.command].flat().filter((part) => part !== undefined).join(" ")

/**
 * Every environment variable the app reads. Most are read as `Config.X("NAME")`, but
 * AppConfig also reads some through local helpers (`optionalString("S3_ENDPOINT")`,
 * `hostPort("RUNNER_ADDRESS")`), so any call whose first argument is an upper-case
 * string literal counts.
 */
const appConfigSource = read("services/platform/AppConfig.ts")
const appVariables = new Set([...appConfigSource.matchAll(/\b\w+\(\s*"([A-Z][A-Z0-9_]*)"/g)].map((match) => match[1]))

/** GUIDE §2's table: the variables the README documents and the app must read. */
const guideVariables = [
  "PORT",
  "HOST",
  "BASE_URL",
  "DATA_DIR",
  "DATABASE_URL",
  "S3_ENDPOINT",
  "S3_BUCKET",
  "S3_REGION",
  "S3_ACCESS_KEY_ID",
  "S3_SECRET_ACCESS_KEY",
  "S3_FORCE_PATH_STYLE",
  "SMTP_URL",
  "MAIL_FROM",
  "ADMIN_TOKEN",
  "MASTER_KEY",
  "REGION",
  "RUNNER_ADDRESS",
  "RUNNER_LISTEN_ADDRESS",
  "OUTBOUND_ALLOW_PRIVATE"
]

describe("docker-compose.yml", () => {
  it("defines Postgres, MinIO with its bucket job, Mailpit and two Canopy runners", () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(["postgres", "minio", "bucket-init", "mailpit", "canopy-1", "canopy-2"])
    )
    expect(services.postgres.image).toMatch(/^postgres:17\b/)
    expect(services.minio.image).toMatch(/^minio\/minio\b/)
    expect(services["bucket-init"].image).toMatch(/^minio\/mc\b/)
    expect(services.mailpit.image).toMatch(/^axllent\/mailpit\b/)
    for (const name of canopyNames) {
      const build = services[name].build
      expect(typeof build === "string" ? build : build?.context, name).toBe(".")
    }
  })

  it("reads only environment variables the app reads", () => {
    // The parse must be meaningful before comparing against it.
    expect([...appVariables]).toEqual(expect.arrayContaining(guideVariables))
    for (const name of canopyNames) {
      const env = envOf(services[name])
      expect(Object.keys(env).length, name).toBeGreaterThan(0)
      const unknown = Object.keys(env).filter((variable) => !appVariables.has(variable))
      expect(unknown, `${name} sets variables AppConfig does not read`).toEqual([])
    }
  })

  it("gives both runners the same database, storage, mail and secrets", () => {
    const [one, two] = canopyNames.map((name) => envOf(services[name]))
    const shared = [
      "DATABASE_URL",
      "S3_ENDPOINT",
      "S3_BUCKET",
      "S3_ACCESS_KEY_ID",
      "S3_SECRET_ACCESS_KEY",
      "S3_FORCE_PATH_STYLE",
      "SMTP_URL",
      "ADMIN_TOKEN",
      "MASTER_KEY"
    ]
    for (const variable of shared) {
      expect(one[variable], variable).toBeTruthy()
      expect(two[variable], variable).toBe(one[variable])
    }
  })

  it("takes the admin token and master key from the environment, never a committed value", () => {
    for (const name of canopyNames) {
      const env = envOf(services[name])
      expect(env.ADMIN_TOKEN).toMatch(/^\$\{ADMIN_TOKEN:\?[^}]*\}$/)
      expect(env.MASTER_KEY).toMatch(/^\$\{MASTER_KEY:\?[^}]*\}$/)
    }
  })

  it("gives each runner its own RUNNER_ADDRESS, named after its service, and its own host port", () => {
    const addresses = canopyNames.map((name) => envOf(services[name]).RUNNER_ADDRESS)
    expect(new Set(addresses).size).toBe(canopyNames.length)
    canopyNames.forEach((name, index) => {
      expect(addresses[index]).toBe(`${name}:34431`)
      const env = envOf(services[name])
      expect(env.RUNNER_LISTEN_ADDRESS).toMatch(/^0\.0\.0\.0:34431$/)
      expect(services[name].ports).toEqual([`${3001 + index}:${env.PORT}`])
      expect(env.BASE_URL).toBe(`http://localhost:${3001 + index}`)
    })
  })

  it("points the runners at the services that exist, with matching credentials", () => {
    const env = envOf(services["canopy-1"])

    const db = new URL(env.DATABASE_URL)
    const pg = envOf(services.postgres)
    expect(db.protocol).toBe("postgres:")
    expect(db.hostname).toBe("postgres")
    expect(db.username).toBe(pg.POSTGRES_USER)
    expect(db.password).toBe(pg.POSTGRES_PASSWORD)
    expect(db.pathname).toBe(`/${pg.POSTGRES_DB}`)

    const s3 = new URL(env.S3_ENDPOINT)
    const minio = envOf(services.minio)
    expect(`${s3.hostname}:${s3.port}`).toBe("minio:9000")
    expect(env.S3_FORCE_PATH_STYLE).toBe("true")
    expect(env.S3_ACCESS_KEY_ID).toBe(minio.MINIO_ROOT_USER)
    expect(env.S3_SECRET_ACCESS_KEY).toBe(minio.MINIO_ROOT_PASSWORD)

    const smtp = new URL(env.SMTP_URL)
    expect(smtp.protocol).toBe("smtp:")
    expect(smtp.hostname).toBe("mailpit")
    expect(smtp.port).toBe("1025")
  })

  it("creates the runners' bucket before they start", () => {
    const bucket = envOf(services["canopy-1"]).S3_BUCKET
    const job = commandText(services["bucket-init"])
    expect(job).toContain("http://minio:9000")
    expect(job).toMatch(new RegExp(`mc mb (--ignore-existing|-p) local/${bucket}\\b`))
    expect(envOf(services["bucket-init"]).MINIO_ROOT_USER).toBe(envOf(services.minio).MINIO_ROOT_USER)
  })

  it("orders start-up with depends_on on services that exist and can satisfy the condition", () => {
    const known = new Set(Object.keys(services))
    for (const [name, service] of Object.entries(services)) {
      for (const [dependency, condition] of Object.entries(dependsOn(service))) {
        expect(known.has(dependency), `${name} depends on unknown ${dependency}`).toBe(true)
        expect(dependency).not.toBe(name)
        if (condition === "service_healthy") {
          expect(services[dependency].healthcheck, `${dependency} needs a healthcheck`).toBeDefined()
        }
      }
    }
    for (const name of canopyNames) {
      const deps = dependsOn(services[name])
      expect(deps.postgres).toBe("service_healthy")
      expect(deps["bucket-init"]).toBe("service_completed_successfully")
      expect(deps).toHaveProperty("mailpit")
    }
  })

  it("declares every named volume it mounts", () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}))
    for (const [name, service] of Object.entries(services)) {
      const volumes = (service as { volumes?: ReadonlyArray<string> }).volumes ?? []
      for (const volume of volumes) {
        const source = volume.split(":")[0]
        if (!source.startsWith(".") && !source.startsWith("/")) {
          expect(declared.has(source), `${name} mounts undeclared volume ${source}`).toBe(true)
        }
      }
    }
  })
})

describe("Dockerfile", () => {
  // Instructions with line continuations joined.
  const instructions = read("Dockerfile")
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
  const named = (keyword: string) =>
    instructions.filter((line) => line.toUpperCase().startsWith(`${keyword} `)).map((line) =>
      line.slice(keyword.length + 1).trim()
    )

  it("runs node itself as PID 1 on src/main.ts, like `npm start`", () => {
    const cmd = named("CMD")
    expect(cmd).toHaveLength(1)
    expect(JSON.parse(cmd[0])).toEqual(["node", "src/main.ts"])
    const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string> }
    // The same command: Node runs the TypeScript itself, with no loader in either.
    expect(pkg.scripts.start).toBe("node src/main.ts")
    expect(Fs.existsSync(Path.join(root, "src/main.ts"))).toBe(true)
  })

  it("builds on Node 24 with production dependencies, as a non-root user", () => {
    expect(named("FROM")).toEqual(["node:24-bookworm-slim"])
    // Without install scripts, so the `node` package does not download a second runtime.
    expect(named("RUN").some((run) => /npm ci --omit=dev --ignore-scripts\b/.test(run))).toBe(true)
    const user = named("USER")
    expect(user.length).toBeGreaterThan(0)
    expect(user[user.length - 1]).not.toMatch(/^(root|0)(:|$)/)
  })

  it("copies every source folder the app loads, and .dockerignore keeps them", () => {
    const copied = named("COPY").flatMap((copy) => copy.split(/\s+/).slice(0, -1))
    const ignored = read(".dockerignore").split(/\r?\n/).map((line) => line.trim()).filter((line) =>
      line !== "" && !line.startsWith("#")
    )
    for (const folder of ["src", "schemas", "services", "layers", "migrations", "package.json", "package-lock.json"]) {
      expect(copied, folder).toContain(folder)
      expect(Fs.existsSync(Path.join(root, folder)), folder).toBe(true)
      expect(ignored, folder).not.toContain(folder)
    }
  })

  it("exposes the HTTP port and the runner port the compose file uses", () => {
    const exposed = named("EXPOSE").flatMap((ports) => ports.split(/\s+/))
    expect(exposed).toEqual(expect.arrayContaining(["3000", "34431"]))
    for (const name of canopyNames) {
      const env = envOf(services[name])
      expect(exposed).toContain(env.PORT)
      expect(exposed).toContain(env.RUNNER_ADDRESS.split(":")[1])
    }
  })
})

describe("README", () => {
  it("documents every environment variable the app reads", () => {
    const readme = read("README.md")
    const documented = new Set([...readme.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1]))
    expect([...appVariables].filter((variable) => !documented.has(variable))).toEqual([])
  })
})
