import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

/**
 * Status page components (GUIDE §6: the spec names them without endpoints): a named group
 * of monitors shown as one row of the status summary and page.
 *
 * Wire choices: `description` is `null` when unset; `monitorIds` keeps the order given;
 * `position` orders the list (ascending, then creation), default after the last one.
 */

const notBlank = Schema.makeFilter((value: string) => value.trim().length > 0, { message: "must not be blank" })

export const ComponentName = Schema.String.check(Schema.isMaxLength(100), notBlank)
export const ComponentDescription = Schema.String.check(Schema.isMaxLength(1000))
export const ComponentMonitorIds = Schema.Array(Schema.String.check(Schema.isMaxLength(100))).check(
  Schema.isMaxLength(100)
)
export const ComponentPosition = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000 }))

export const CreateComponent = Schema.Struct({
  name: ComponentName,
  description: Schema.optional(Schema.NullOr(ComponentDescription)),
  monitorIds: Schema.optional(ComponentMonitorIds),
  position: Schema.optional(ComponentPosition)
}).annotate({ examples: [{ name: "API", description: "The public REST API", monitorIds: [] }] })
export type CreateComponent = typeof CreateComponent.Type

export const UpdateComponent = Schema.Struct({
  name: Schema.optional(ComponentName),
  description: Schema.optional(Schema.NullOr(ComponentDescription)),
  monitorIds: Schema.optional(ComponentMonitorIds),
  position: Schema.optional(ComponentPosition)
}).annotate({ examples: [{ name: "Public API", position: 0 }] })
export type UpdateComponent = typeof UpdateComponent.Type

export const Component = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  monitorIds: Schema.Array(Schema.String),
  position: Schema.Int,
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type Component = typeof Component.Type

export const ComponentList = Schema.Struct({ components: Schema.Array(Component), count: Schema.Int })
export type ComponentList = typeof ComponentList.Type

/** Published in the changing transaction, so live views can refresh the summary. */
export const ComponentChangedEvent = eventType(
  "component.changed",
  Schema.Struct({ componentId: Schema.String, change: Schema.Literals(["created", "updated", "deleted"]) })
)
