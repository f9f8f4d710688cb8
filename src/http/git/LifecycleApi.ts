import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import {
  CreateTransfer,
  RestoreRepository,
  StorageUsage,
  Transfer,
  TransferList,
  TrashList
} from "../../../schemas/git/Lifecycle.ts"
import { Repository } from "../../../schemas/git/Repositories.ts"
import { Conflict, Forbidden, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const idParams = { id: Schema.String }

/**
 * Repository lifecycle (GUIDE §16): the trash, the organization's storage, and transfers.
 * Trash and transfers need `code:admin`; storage `code:read`.
 */
export class LifecycleApi extends HttpApiGroup.make("lifecycle").add(
  HttpApiEndpoint.get("trash", "/trash", {
    success: TrashList
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("List the trash", "Deleted repositories with `deletedAt` and `purgeAt` (30 days later). Scope `code:admin`.")
  ),
  HttpApiEndpoint.post("restore", "/trash/:id/restore", {
    params: idParams,
    payload: RestoreRepository,
    success: Repository,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("Restore a repository", "Back from the trash; 409 when its name is taken and no `name` is given.")
  ),
  HttpApiEndpoint.delete("purge", "/trash/:id", {
    params: idParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("Purge a repository", "Deletes a trashed repository for good: packs, LFS objects, CI caches, rows.")
  ),
  HttpApiEndpoint.get("storage", "/storage", {
    success: StorageUsage
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs("Storage", "Packs + LFS of live repositories against the plan's storage. Scope `code:read`.")
  ),
  HttpApiEndpoint.post("transfer", "/repos/:org/:repo/transfer", {
    params: { org: Schema.String, repo: Schema.String },
    payload: CreateTransfer,
    success: Transfer.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Forbidden, Conflict, ValidationError]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs(
      "Transfer a repository",
      "To `targetOrg`, where the caller must be owner or admin too; pending for 7 days. Scope `code:admin`."
    )
  ),
  HttpApiEndpoint.get("transfers", "/transfers", {
    success: TransferList
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("List transfers", "Incoming and outgoing, newest first. Scope `code:admin`.")
  ),
  HttpApiEndpoint.post("accept", "/transfers/:id/accept", {
    params: idParams,
    success: Transfer,
    error: [NotFound, Forbidden, Conflict]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("Accept a transfer", "By an owner or admin of the target: the repository moves in one transaction.")
  ),
  HttpApiEndpoint.post("decline", "/transfers/:id/decline", {
    params: idParams,
    success: Transfer,
    error: [NotFound, Forbidden, Conflict]
  }).annotate(RequiredScope, "code:admin").annotateMerge(
    docs("Decline a transfer", "By an owner or admin of the target.")
  )
).prefix("/api/v1/code").middleware(Authentication) {}
