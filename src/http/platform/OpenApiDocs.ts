import { SchemaAST } from "effect"
import { HttpApi, type HttpApiGroup, OpenApi } from "effect/http-api"

/** An operation's summary (a few words) and description (what it does, who may call it). */
export const docs = (summary: string, description: string) => OpenApi.annotations({ summary, description })

const safeInteger = Number.MAX_SAFE_INTEGER
const nonFiniteNames = new Set(["NaN", "Infinity", "-Infinity"])

const isNonFiniteAlternative = (schema: unknown) =>
  typeof schema === "object" && schema !== null && (schema as { type?: unknown }).type === "string" &&
  Array.isArray((schema as { enum?: unknown }).enum) &&
  (schema as { enum: Array<unknown> }).enum.every((value) => nonFiniteNames.has(String(value)))

/**
 * What the generated document says about numbers, made true to the wire: JSON numbers
 * here are finite (the `"NaN"`/`"Infinity"` string alternatives Schema's JSON codec allows
 * are dropped), and an integer without a bound of its own has none (not ±2^53).
 */
export const cleanNumbers = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(cleanNumbers)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if ((key === "minimum" && value === -safeInteger) || (key === "maximum" && value === safeInteger)) continue
    if (key === "anyOf" && Array.isArray(value)) {
      const kept = value.filter((alternative) => !isNonFiniteAlternative(alternative)).map(cleanNumbers)
      if (kept.length === 1 && typeof kept[0] === "object") Object.assign(out, kept[0])
      else out.anyOf = kept
      continue
    }
    out[key] = cleanNumbers(value)
  }
  return out
}

/** `/api/v1/monitors/:id` as OpenAPI writes it: `/api/v1/monitors/{id}`. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}")

/**
 * Request body examples from the payload Schemas' own `examples` annotations, added to each
 * operation's JSON media type (the generator keeps property schemas but not root annotations).
 */
export const withBodyExamples = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
) =>
(spec: Record<string, any>): Record<string, any> => {
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const examples = [...endpoint.payload.values()].flatMap(({ schemas }) =>
        schemas.flatMap((schema) => SchemaAST.resolve(schema.ast)?.examples ?? [])
      )
      const media = spec.paths?.[openApiPath(endpoint.path)]?.[endpoint.method.toLowerCase()]?.requestBody?.content
        ?.["application/json"]
      if (examples.length === 0 || media === undefined) return
      media.examples = Object.fromEntries(examples.map((value, index) => [`example${index + 1}`, { value }]))
    }
  })
  return spec
}
