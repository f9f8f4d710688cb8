import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Option } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { allScopes } from "../schemas/tenancy/Tenancy.ts"
import { CanopyApi } from "./http/Api.ts"

/**
 * `npm run cli`: the admin API from a terminal. It talks to a running Canopy (the
 * embedded Postgres belongs to the server process), at `--url` or BASE_URL, with
 * `--token`, ADMIN_TOKEN or the token saved in DATA_DIR/admin-token.
 */
const connection = {
  url: Flag.String("url").pipe(
    Flag.withDescription("Canopy's base URL"),
    Flag.withDefault(process.env.BASE_URL ?? `http://localhost:${process.env.PORT ?? 3000}`)
  ),
  token: Flag.String("token").pipe(Flag.withDescription("admin token"), Flag.optional)
}

const root = Command.make("canopy").pipe(
  Command.withSharedFlags(connection),
  Command.withDescription("Administer a running Canopy")
)

const adminClient = Effect.gen(function*() {
  const { token, url } = yield* root
  const bearer = Option.getOrElse(
    token,
    () =>
      process.env.ADMIN_TOKEN ??
        Fs.readFileSync(Path.join(process.env.DATA_DIR ?? "./.data", "admin-token"), "utf8").trim()
  )
  const client = yield* HttpApiClient.make(CanopyApi, {
    baseUrl: url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(bearer))
  })
  return client.admin
})

const print = (value: unknown) => Console.log(JSON.stringify(value, null, 2))
const plan = Flag.Literals("plan", ["free", "hobby", "pro", "enterprise"])

const orgList = Command.make(
  "list",
  {},
  () => adminClient.pipe(Effect.flatMap((admin) => admin.listOrgs()), Effect.flatMap(print))
).pipe(Command.withDescription("List every organization"))

const orgCreate = Command.make(
  "create",
  { slug: Argument.String("slug"), name: Argument.String("name"), plan: plan.pipe(Flag.optional) },
  ({ name, plan, slug }) =>
    adminClient.pipe(
      Effect.flatMap((admin) => admin.createOrg({ payload: { slug, name, plan: Option.getOrUndefined(plan) } })),
      Effect.flatMap(print)
    )
).pipe(Command.withDescription("Create an organization (plan defaults to free)"))

const orgUpdate = Command.make(
  "update",
  {
    slug: Argument.String("slug"),
    name: Flag.String("name").pipe(Flag.optional),
    plan: plan.pipe(Flag.optional),
    requestsPerMinute: Flag.Int("requests-per-minute").pipe(Flag.optional)
  },
  ({ name, plan, requestsPerMinute, slug }) =>
    adminClient.pipe(
      Effect.flatMap((admin) =>
        admin.updateOrg({
          params: { slug },
          payload: {
            name: Option.getOrUndefined(name),
            plan: Option.getOrUndefined(plan),
            requestsPerMinute: Option.getOrUndefined(requestsPerMinute)
          }
        })
      ),
      Effect.flatMap(print)
    )
).pipe(Command.withDescription("Change an organization's name, plan or request quota"))

const userAdd = Command.make(
  "add",
  {
    org: Argument.String("org"),
    username: Argument.String("username"),
    email: Argument.String("email"),
    name: Flag.String("name").pipe(Flag.optional),
    role: Flag.Literals("role", ["owner", "admin", "member"]).pipe(Flag.optional)
  },
  ({ email, name, org, role, username }) =>
    adminClient.pipe(
      Effect.flatMap((admin) =>
        admin.addUser({
          params: { slug: org },
          payload: { username, email, name: Option.getOrUndefined(name), role: Option.getOrUndefined(role) }
        })
      ),
      Effect.flatMap(print)
    )
).pipe(Command.withDescription("Add a user to an organization (created if new) with a role"))

const keyCreate = Command.make(
  "create",
  {
    org: Argument.String("org"),
    username: Argument.String("username"),
    name: Flag.String("name").pipe(Flag.optional),
    scopes: Argument.Literals("scope", allScopes).pipe(Argument.variadic())
  },
  ({ name, org, scopes, username }) =>
    adminClient.pipe(
      Effect.flatMap((admin) =>
        admin.createKey({
          params: { slug: org },
          payload: { username, name: Option.getOrUndefined(name), scopes: scopes.length > 0 ? scopes : undefined }
        })
      ),
      Effect.flatMap(print)
    )
).pipe(Command.withDescription("Create an API key for a user; with no scopes it gets every scope the role allows"))

const keyRevoke = Command.make(
  "revoke",
  { id: Argument.String("id") },
  ({ id }) =>
    adminClient.pipe(
      Effect.flatMap((admin) => admin.revokeKey({ params: { id } })),
      Effect.andThen(Console.log(`revoked ${id}`))
    )
).pipe(Command.withDescription("Revoke an API key at once"))

root.pipe(
  Command.withSubcommands([
    Command.make("org").pipe(
      Command.withDescription("Organizations: list, create, update"),
      Command.withSubcommands([orgList, orgCreate, orgUpdate])
    ),
    Command.make("user").pipe(
      Command.withDescription("Users and their membership of an organization"),
      Command.withSubcommands([userAdd])
    ),
    Command.make("key").pipe(
      Command.withDescription("API keys: create, revoke"),
      Command.withSubcommands([keyCreate, keyRevoke])
    )
  ]),
  Command.run({ version: "0.1.0" }),
  // API errors carry the server's message; print it instead of a stack trace. Help (asked
  // for, or shown because no subcommand was given) is already printed: exit 0 unless a
  // parse error came with it.
  Effect.catch((error) =>
    CliError.isCliError(error) && error._tag === "ShowHelp"
      ? Effect.sync(() => process.exitCode = error.errors.length > 0 ? 1 : 0)
      : Console.error(`canopy: ${(error as { message?: string }).message ?? String(error)}`).pipe(
        Effect.andThen(Effect.sync(() => process.exitCode = 1))
      )
  ),
  Effect.provide([NodeServices.layer, FetchHttpClient.layer]),
  NodeRuntime.runMain
)
