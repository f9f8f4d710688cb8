import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { monitorValidationError } from "../../schemas/monitors/Monitors.ts"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import {
  type Component,
  ComponentChangedEvent,
  type ComponentList,
  type CreateComponent,
  type UpdateComponent
} from "../../schemas/status/Components.ts"
import { publish } from "../events/Events.ts"
import { foreignMonitorIssues, replaceMonitorLinks } from "../incidents/MonitorLinks.ts"
import { MonitorRepository } from "../monitors/MonitorRepository.ts"
import { makeId } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import {
  deleteComponent,
  insertComponent,
  lockComponent,
  selectComponents,
  toComponent,
  updateComponent
} from "./ComponentRows.ts"

/*
 * What other features (status page subscriptions) read of the components, each taking the
 * caller's `SqlClient`: they write no SQL of their own on `components`.
 */
export { componentsWithMonitors, ownedComponentIds } from "./ComponentRows.ts"

/**
 * Status page components of an organization (GUIDE §6). Every method is scoped by `orgId`;
 * another organization's component is a `NotFound`, and `monitorIds` must name monitors of
 * the same organization.
 */
export class Components extends Context.Service<Components, {
  create(orgId: string, input: CreateComponent): Effect.Effect<Component, ValidationError>
  /** By `position`, then creation. */
  list(orgId: string): Effect.Effect<ComponentList>
  get(orgId: string, id: string): Effect.Effect<Component, NotFound>
  update(orgId: string, id: string, patch: UpdateComponent): Effect.Effect<Component, NotFound | ValidationError>
  remove(orgId: string, id: string): Effect.Effect<void, NotFound>
}>()("canopy/status/Components") {
  static readonly layer = Layer.effect(
    Components,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitors = yield* MonitorRepository
      const notFound = (id: string) => new NotFound({ message: `Component '${id}' not found` })
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      const load = (orgId: string, id: string) =>
        Effect.flatMap(
          selectComponents(sql, orgId, id),
          (rows) => rows.length === 0 ? Effect.fail(notFound(id)) : Effect.succeed(toComponent(rows[0]))
        )

      const setMonitors = (id: string, ids: ReadonlyArray<string>) =>
        replaceMonitorLinks({ table: "component_monitors", ownerColumn: "component_id" }, id, ids)

      const checkMonitors = (orgId: string, ids: ReadonlyArray<string> | undefined) =>
        Effect.gen(function*() {
          const issues = ids === undefined ? [] : yield* foreignMonitorIssues(monitors, orgId, "monitorIds", ids)
          if (issues.length > 0) return yield* monitorValidationError(issues)
        })

      const changed = (componentId: string, orgId: string, change: "created" | "updated" | "deleted") =>
        publish(ComponentChangedEvent.make(orgId, { componentId, change }))

      const create = Effect.fn("Components.create")(function*(orgId: string, input: CreateComponent) {
        const at = yield* now
        const id = makeId("cmp")
        return yield* inTransaction(
          sql,
          Effect.gen(function*() {
            yield* checkMonitors(orgId, input.monitorIds)
            yield* insertComponent(sql, id, orgId, input, at)
            yield* setMonitors(id, input.monitorIds ?? [])
            yield* changed(id, orgId, "created")
            return yield* Effect.orDie(load(orgId, id))
          })
        )
      })

      const list = Effect.fn("Components.list")(function*(orgId: string) {
        const rows = yield* selectComponents(sql, orgId).pipe(Effect.orDie)
        return { components: rows.map(toComponent), count: rows.length }
      })

      const get = Effect.fn("Components.get")(function*(orgId: string, id: string) {
        return yield* load(orgId, id).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const update = Effect.fn("Components.update")(function*(orgId: string, id: string, patch: UpdateComponent) {
        const at = yield* now
        return yield* inTransaction(
          sql,
          Effect.gen(function*() {
            const rows = yield* lockComponent(sql, orgId, id)
            if (rows.length === 0) return yield* notFound(id)
            // An empty body changes nothing: no write, no event.
            if (Object.values(patch).every((value) => value === undefined)) return yield* Effect.orDie(load(orgId, id))
            yield* checkMonitors(orgId, patch.monitorIds)
            yield* updateComponent(sql, id, patch, at)
            if (patch.monitorIds !== undefined) yield* setMonitors(id, patch.monitorIds)
            yield* changed(id, orgId, "updated")
            return yield* Effect.orDie(load(orgId, id))
          })
        )
      })

      const remove = Effect.fn("Components.remove")(function*(orgId: string, id: string) {
        yield* inTransaction(
          sql,
          Effect.gen(function*() {
            const rows = yield* deleteComponent(sql, orgId, id)
            if (rows.length === 0) return yield* notFound(id)
            yield* changed(id, orgId, "deleted")
          })
        )
      })

      return Components.of({ create, list, get, update, remove })
    })
  ).pipe(Layer.provide(MonitorRepository.layer))
}
