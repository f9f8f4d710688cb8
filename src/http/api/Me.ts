import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Me } from "../../../schemas/Tenancy.ts"
import { Authentication } from "./Security.ts"

export class MeApi extends HttpApiGroup.make("me").add(
  HttpApiEndpoint.get("me", "/api/v1/me", { success: Me })
).middleware(Authentication) {}
