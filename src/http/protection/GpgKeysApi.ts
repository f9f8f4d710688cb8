import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { CreateGpgKey, GpgKey, GpgKeyList } from "../../../schemas/protection/GpgKeys.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication } from "../tenancy/Security.ts"

/** The calling key's user's GPG keys (GUIDE §12 signed commits); any key of the user may manage them. */
export class GpgKeysApi extends HttpApiGroup.make("gpgKeys").add(
  HttpApiEndpoint.get("list", "/", { success: GpgKeyList }).annotateMerge(
    docs("List your GPG keys", "The public keys the key's user registered, newest first.")
  ),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateGpgKey,
    success: GpgKey.annotate({ httpApiStatus: 201 }),
    error: [Conflict, ValidationError]
  }).annotateMerge(
    docs(
      "Register a GPG key",
      "An armored OpenPGP public key; commits signed by it (or its subkeys) count as signed in every organization " +
        "the user belongs to. The same key twice is a 409."
    )
  ),
  HttpApiEndpoint.get("get", "/:id", { params: { id: Schema.String }, success: GpgKey, error: NotFound })
    .annotateMerge(docs("Read a GPG key", "One of your registered keys.")),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: { id: Schema.String },
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotateMerge(docs("Remove a GPG key", "Commits it signed no longer verify (204)."))
).prefix("/api/v1/user/gpg-keys").middleware(Authentication) {}
