import { Effect, Stream } from "effect"
import type { AiError } from "effect/ai"
import { LanguageModel, type Prompt, type Response } from "effect/ai"

/**
 * What every wire format reduces to: the system and user text of a prompt in, the answer's
 * text (JSON for structured output: a tool call's arguments become text) and usage out.
 * `languageModel` turns such a call into effect's `LanguageModel`, so reviews use
 * `generateObject` with a Schema whatever the provider.
 */

export interface ModelRequest {
  readonly system: string
  readonly user: string
  /** The JSON Schema of the wanted object, when structured output is asked for. */
  readonly json: { readonly name: string; readonly schema: unknown } | undefined
}

export interface ModelReply {
  readonly text: string
  readonly inputTokens: number
  readonly outputTokens: number
  readonly finish: typeof Response.FinishReason.Type
}

const textOf = (message: Prompt.Message): string => {
  if (message.role === "system") return message.content
  if (message.role === "user" || message.role === "assistant") {
    return message.content.map((part) => part.type === "text" ? part.text : "").join("")
  }
  return ""
}

/** The prompt flattened to one system text and one user text. */
export const flatten = (prompt: Prompt.Prompt): { system: string; user: string } => ({
  system: prompt.content.filter((m) => m.role === "system").map(textOf).join("\n\n"),
  user: prompt.content.filter((m) => m.role !== "system").map(textOf).join("\n\n")
})

const memos = new WeakMap<LanguageModel.CodecTransformer, LanguageModel.CodecTransformer>()

/**
 * `transformer` once per schema: it derives a JSON Schema document (milliseconds), and a
 * review asks for the same answer schema twice a call (the request, the decoding) and in
 * every review. Schemas are immutable, so one result per schema object serves them all.
 */
export const memoized = (transformer: LanguageModel.CodecTransformer): LanguageModel.CodecTransformer => {
  const known = memos.get(transformer)
  if (known !== undefined) return known
  const results = new WeakMap<object, ReturnType<LanguageModel.CodecTransformer>>()
  const memo: LanguageModel.CodecTransformer = (schema) => {
    let result = results.get(schema)
    if (result === undefined) results.set(schema, result = transformer(schema))
    return result as ReturnType<typeof transformer<any, any, any, any>>
  }
  memos.set(transformer, memo)
  return memo
}

export const languageModel = (options: {
  readonly call: (request: ModelRequest) => Effect.Effect<ModelReply, AiError.AiError>
  readonly codecTransformer: LanguageModel.CodecTransformer
}) => {
  const codecTransformer = memoized(options.codecTransformer)
  const generate = (provider: LanguageModel.ProviderOptions) =>
    Effect.gen(function*() {
      const { system, user } = flatten(provider.prompt)
      const json = provider.responseFormat.type === "json"
        ? {
          name: provider.responseFormat.objectName,
          schema: codecTransformer(provider.responseFormat.schema as never).jsonSchema
        }
        : undefined
      const reply = yield* options.call({ system, user, json })
      const parts: Array<Response.PartEncoded> = [
        { type: "text", text: reply.text },
        {
          type: "finish",
          reason: reply.finish,
          usage: {
            inputTokens: { total: reply.inputTokens, uncached: reply.inputTokens },
            outputTokens: { total: reply.outputTokens, text: reply.outputTokens }
          }
        }
      ]
      return parts
    })
  return LanguageModel.make({
    generateText: generate,
    // Reviews do not stream; the whole answer comes as one delta.
    streamText: (provider) =>
      Stream.fromEffect(generate(provider)).pipe(
        Stream.flatMap((parts) => {
          const text = parts[0].type === "text" ? parts[0].text : ""
          const stream: Array<Response.StreamPartEncoded> = [
            { type: "text-start", id: "0" },
            { type: "text-delta", id: "0", delta: text },
            { type: "text-end", id: "0" },
            parts[1] as Response.StreamPartEncoded
          ]
          return Stream.fromIterable(stream)
        })
      ),
    codecTransformer
  })
}
