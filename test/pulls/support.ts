import { Effect } from "effect"
import { commit, createRepo, type GitClient } from "../git/gitClient.ts"
import { adminToken, bootstrapOrg, request } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * Pull request test helpers: a repository with `main` and feature branches pushed by a real
 * git client, and the pulls API.
 */

export const pullsUrl = (baseUrl: string, org: string, repo: string, tail = "") =>
  `${baseUrl}/api/v1/code/repos/${org}/${repo}/pulls${tail}`

export type Repo = Effect.Success<ReturnType<typeof createRepo>>

/** A repository whose `main` has `files` (one commit), cloned into `git.dir(name)`. */
export const repoWithMain = (
  git: GitClient,
  baseUrl: string,
  slug: string,
  files: Record<string, string> = { "README.md": "hello\n" },
  name = "work"
) =>
  Effect.gen(function*() {
    const repo = yield* createRepo(baseUrl, { slug })
    const dir = git.dir(name)
    yield* git.ok(["init", "-q", dir])
    yield* commit(git, dir, files, "initial")
    yield* git.ok(["remote", "add", "origin", repo.url], { cwd: dir })
    yield* git.ok(["push", "-q", "origin", "main"], { cwd: dir })
    return { repo, dir }
  })

/** Creates `branch` from `from` in `dir` with one commit per entry of `commits`, and pushes it. */
export const pushBranch = (
  git: GitClient,
  dir: string,
  branch: string,
  commits: ReadonlyArray<Record<string, string>>,
  from = "main"
) =>
  Effect.gen(function*() {
    yield* git.ok(["checkout", "-q", "-B", branch, from], { cwd: dir })
    let head = ""
    for (const [i, files] of commits.entries()) head = yield* commit(git, dir, files, `${branch} commit ${i + 1}`)
    yield* git.ok(["push", "-q", "-f", "origin", branch], { cwd: dir })
    return head
  })

export const api = (baseUrl: string, repo: { slug: string; name: string; key: string }) => {
  const url = (tail = "") => pullsUrl(baseUrl, repo.slug, repo.name, tail)
  return {
    url,
    create: (body: Record<string, unknown>, token = repo.key) => request(url(), { method: "POST", token, body }),
    get: (number: number, token = repo.key) => request(url(`/${number}`), { token }),
    patch: (number: number, body: Record<string, unknown>, token = repo.key) =>
      request(url(`/${number}`), { method: "PATCH", token, body }),
    merge: (number: number, body: Record<string, unknown> = {}, token = repo.key) =>
      request(url(`/${number}/merge`), { method: "POST", token, body }),
    review: (number: number, body: Record<string, unknown>, token = repo.key) =>
      request(url(`/${number}/reviews`), { method: "POST", token, body }),
    comment: (number: number, body: Record<string, unknown>, token = repo.key) =>
      request(url(`/${number}/comments`), { method: "POST", token, body }),
    /** Waits until mergeability is known. */
    settled: (number: number) =>
      eventually(
        `pull request #${number} mergeability`,
        request(url(`/${number}`), { token: repo.key }),
        (response) => response.body?.mergeable !== null && response.body?.mergeableState !== "unknown",
        { timeoutMs: 30_000 }
      )
  }
}

/** A second member of the organization with their own key (a reviewer). */
export const addMember = (baseUrl: string, org: string, username: string) =>
  Effect.gen(function*() {
    const admin = { token: adminToken }
    const user = yield* request(`${baseUrl}/api/v1/admin/orgs/${org}/users`, {
      ...admin,
      method: "POST",
      body: { username, email: `${username}@example.com`, role: "member" }
    })
    if (user.status !== 201) throw new Error(`user: ${user.status} ${JSON.stringify(user.body)}`)
    const key = yield* request(`${baseUrl}/api/v1/admin/orgs/${org}/keys`, {
      ...admin,
      method: "POST",
      body: { username }
    })
    if (key.status !== 201) throw new Error(`key: ${key.status} ${JSON.stringify(key.body)}`)
    return { id: user.body.id as string, key: key.body.key as string }
  })

export { bootstrapOrg }
