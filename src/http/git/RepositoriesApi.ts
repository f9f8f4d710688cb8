import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import {
  Blob,
  BranchList,
  CommitList,
  CommitsQuery,
  CreateRepository,
  PageQuery,
  Repository,
  RepositoryList,
  TagList,
  Tree,
  UpdateRepository
} from "../../../schemas/git/Repositories.ts"
import { Conflict, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const repoParams = { org: Schema.String, repo: Schema.String }
/** `{ref}/{path}`: the ref may contain `/`, so the whole tail is one parameter (see RepoReader). */
const tailParams = { ...repoParams, "*": Schema.String }

/**
 * Repositories (spec 001 "Repositories"): read with `code:read`, create with `code:write`,
 * change settings and delete with `code:admin`. `{org}` must be the key's organization;
 * any other answers 404.
 */
export class RepositoriesApi extends HttpApiGroup.make("repositories").add(
  HttpApiEndpoint.get("list", "/", {
    query: PageQuery,
    success: RepositoryList
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List repositories",
      "The organization's live repositories, newest first, `limit` (default 100) from `offset`. Scope `code:read`."
    )
  ),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateRepository,
    success: Repository.annotate({ httpApiStatus: 201 }),
    error: Conflict
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs("Create a repository", "A new empty repository; a duplicate name is a 409. Scope `code:write`.")
  ),
  HttpApiEndpoint.get("get", "/:org/:repo", {
    params: repoParams,
    success: Repository,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs("Get a repository", "One repository of the key's organization. Scope `code:read`.")
  ),
  HttpApiEndpoint.patch("update", "/:org/:repo", {
    params: repoParams,
    payload: UpdateRepository,
    success: Repository,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Update repository settings",
      "Description, visibility, default branch, forking, `stalePullRequests`. Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.delete("remove", "/:org/:repo", {
    params: repoParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("Delete a repository", "Moves the repository to the trash (204). Scope `code:admin`.")
  ),
  HttpApiEndpoint.get("branches", "/:org/:repo/branches", {
    params: repoParams,
    query: PageQuery,
    success: BranchList,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List branches",
      "Branches with their commit, sorted by name, `limit` (default 100) from `offset`. Scope `code:read`."
    )
  ),
  HttpApiEndpoint.get("tags", "/:org/:repo/tags", {
    params: repoParams,
    query: PageQuery,
    success: TagList,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List tags",
      "Tags with the object they point at and the commit they peel to, sorted by name, `limit` (default 100) " +
        "from `offset`. Scope `code:read`."
    )
  ),
  HttpApiEndpoint.get("tree", "/:org/:repo/tree/*", {
    params: tailParams,
    success: Tree,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs("Read a directory", "Entries of the directory `{ref}/{path}`; the ref may contain `/`. Scope `code:read`.")
  ),
  HttpApiEndpoint.get("blob", "/:org/:repo/blob/*", {
    params: tailParams,
    success: Blob,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs("Read a file", "The file at `{ref}/{path}`, as UTF-8 text or base64. Scope `code:read`.")
  ),
  HttpApiEndpoint.get("commits", "/:org/:repo/commits", {
    params: repoParams,
    query: CommitsQuery,
    success: CommitList,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List commits",
      "The commit log of `ref` (default branch by default), newest first, `limit` (default 30) per page; " +
        "`nextCursor` fetches the next page of the same walk, null on the last. Scope `code:read`."
    )
  )
).prefix("/api/v1/code/repos").middleware(Authentication) {}
