import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Me } from "../../../schemas/tenancy/Tenancy.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication } from "./Security.ts"

export class MeApi extends HttpApiGroup.make("me").add(
  HttpApiEndpoint.get("me", "/api/v1/me", { success: Me }).annotateMerge(
    docs("The calling key", "The user, organization and scopes of the API key making the request; any key may call it.")
  )
).middleware(Authentication) {}
