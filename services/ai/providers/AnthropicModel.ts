import { Schema } from "effect"
import { AiError, AnthropicStructuredOutput } from "effect/ai"
import { keyHeader, type ModelOptions, wireModel } from "./WireModel.ts"

/**
 * Anthropic messages (`POST {baseUrl}/v1/messages`, `x-api-key`, `anthropic-version`).
 * Structured output as one forced tool (`tool_choice: {type: "tool"}`) whose input is the
 * object; a plain text answer is taken as the JSON text.
 */

export const ANTHROPIC_BASE_URL = "https://api.anthropic.com"
const ANTHROPIC_VERSION = "2023-06-01"
const MAX_TOKENS = 8192

const Block = Schema.Struct({
  type: Schema.String,
  text: Schema.optional(Schema.String),
  input: Schema.optional(Schema.Unknown)
})
const Answer = Schema.Struct({
  content: Schema.Array(Block),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Schema.Struct({
    input_tokens: Schema.optional(Schema.Number),
    output_tokens: Schema.optional(Schema.Number)
  }))
})

const finishOf = (reason: string | null | undefined) =>
  reason === "end_turn" || reason === "stop_sequence"
    ? "stop"
    : reason === "max_tokens"
    ? "length"
    : reason === "tool_use"
    ? "tool-calls"
    : "other"

/** Anthropic's error types that are not about HTTP status alone. */
const classify = (status: number, body: string): AiError.AiErrorReason | undefined => {
  if (status === 529) return undefined // overloaded: retried like a 5xx
  if (/"authentication_error"/.test(body)) {
    return new AiError.AuthenticationError({ kind: "InvalidKey", description: `HTTP ${status}` })
  }
  return undefined
}

export const makeAnthropicModel = (options: ModelOptions) =>
  wireModel({
    provider: "anthropic",
    method: "messages",
    defaultBaseUrl: ANTHROPIC_BASE_URL,
    request: (request, base) => {
      const tool = request.json === undefined ? undefined : {
        name: request.json.name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64),
        description: "Submit the result.",
        input_schema: request.json.schema
      }
      return {
        url: `${base}/v1/messages`,
        headers: {
          "anthropic-version": ANTHROPIC_VERSION,
          ...keyHeader(options.apiKey, (key) => ({ "x-api-key": key }))
        },
        body: {
          model: options.model,
          max_tokens: MAX_TOKENS,
          ...(request.system === "" ? {} : { system: request.system }),
          messages: [{ role: "user", content: request.user }],
          ...(tool === undefined ? {} : { tools: [tool], tool_choice: { type: "tool", name: tool.name } })
        }
      }
    },
    answer: Answer,
    notAnAnswer: "The answer is not a message",
    reply: (answer) => {
      const toolUse = answer.content.find((block) => block.type === "tool_use")
      return {
        text: toolUse !== undefined
          ? JSON.stringify(toolUse.input ?? {})
          : answer.content.filter((block) => block.type === "text").map((block) => block.text ?? "").join(""),
        inputTokens: answer.usage?.input_tokens ?? 0,
        outputTokens: answer.usage?.output_tokens ?? 0,
        finish: finishOf(answer.stop_reason)
      }
    },
    classify,
    codecTransformer: AnthropicStructuredOutput.toCodecAnthropic
  }, options)
