import { Config, Effect, Option } from "effect"
import { SourceError } from "effect/ConfigProvider"

/**
 * The variable `name` as one of `values` (any case); `fallback` when unset or empty (an empty
 * variable counts as unset, as in AppConfig), else a configuration error naming the choices.
 */
export const literal = <const A extends string>(name: string, values: ReadonlyArray<A>, fallback: A) =>
  Effect.flatMap(
    Effect.gen(function*() {
      return yield* Config.option(Config.String(name))
    }),
    (value) => {
      const text = Option.getOrElse(value, () => "").trim().toLowerCase()
      if (text === "") return Effect.succeed(fallback)
      const found = values.find((candidate) => candidate === text)
      return found !== undefined ? Effect.succeed(found) : Effect.fail(
        new Config.ConfigError(new SourceError({ message: `${name} must be one of ${values.join(", ")}` }))
      )
    }
  )
