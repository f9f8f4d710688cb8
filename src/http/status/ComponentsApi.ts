import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { Component, ComponentList, CreateComponent, UpdateComponent } from "../../../schemas/status/Components.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const idParams = { id: Schema.String }

/** Status page components (GUIDE §6): read with `monitors:read`, change with `monitors:write`. */
export class ComponentsApi extends HttpApiGroup.make("components").add(
  HttpApiEndpoint.get("list", "/", {
    success: ComponentList
  }).annotate(RequiredScope, "monitors:read").annotateMerge(
    docs("List components", "The status page's components in display order. Scope `monitors:read`.")
  ),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateComponent,
    success: Component.annotate({ httpApiStatus: 201 }),
    error: ValidationError
  }).annotate(RequiredScope, "monitors:write").annotateMerge(
    docs("Create a component", "A named group of the organization's monitors. Scope `monitors:write`.")
  ),
  HttpApiEndpoint.get("get", "/:id", {
    params: idParams,
    success: Component,
    error: NotFound
  }).annotate(RequiredScope, "monitors:read").annotateMerge(
    docs("Read a component", "Its name, description, monitors and position. Scope `monitors:read`.")
  ),
  HttpApiEndpoint.patch("update", "/:id", {
    params: idParams,
    payload: UpdateComponent,
    success: Component,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "monitors:write").annotateMerge(
    docs("Update a component", "Any subset of its fields; `monitorIds` replaces the list. Scope `monitors:write`.")
  ),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: idParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "monitors:write").annotateMerge(
    docs("Delete a component", "Its monitors are kept. Scope `monitors:write`.")
  )
).prefix("/api/v1/components").middleware(Authentication) {}
