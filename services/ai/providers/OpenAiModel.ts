import { Redacted, Schema } from "effect"
import { OpenAiStructuredOutput } from "effect/ai"
import { keyHeader, type ModelOptions, wireModel } from "./WireModel.ts"

/**
 * OpenAI chat completions (`POST {baseUrl}/chat/completions`, `Authorization: Bearer`), the
 * wire format of OpenAI and of the compatible servers and proxies (Ollama, vLLM, Azure,
 * LiteLLM). Structured output as `response_format: json_schema`; an answer that comes as a
 * tool call instead is read from its arguments.
 */

export const OPENAI_BASE_URL = "https://api.openai.com/v1"

const Answer = Schema.Struct({
  choices: Schema.Array(Schema.Struct({
    message: Schema.Struct({
      content: Schema.optional(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
        function: Schema.Struct({ arguments: Schema.String })
      }))))
    }),
    finish_reason: Schema.optional(Schema.NullOr(Schema.String))
  })),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    prompt_tokens: Schema.optional(Schema.Number),
    completion_tokens: Schema.optional(Schema.Number)
  })))
})

const finishOf = (reason: string | null | undefined) =>
  reason === "stop" ? "stop" : reason === "length" ? "length" : reason === "tool_calls" ? "tool-calls" : "other"

export const makeOpenAiModel = (options: ModelOptions) =>
  wireModel({
    provider: "openai",
    method: "chat.completions",
    defaultBaseUrl: OPENAI_BASE_URL,
    request: (request, base) => ({
      url: `${base}/chat/completions`,
      headers: keyHeader(options.apiKey, (key) => ({ authorization: Redacted.make(`Bearer ${Redacted.value(key)}`) })),
      body: {
        model: options.model,
        messages: [
          ...(request.system === "" ? [] : [{ role: "system", content: request.system }]),
          { role: "user", content: request.user }
        ],
        ...(request.json === undefined ? {} : {
          response_format: {
            type: "json_schema",
            json_schema: { name: request.json.name, schema: request.json.schema, strict: true }
          }
        })
      }
    }),
    answer: Answer,
    notAnAnswer: "The answer is not a chat completion",
    reply: (answer) => {
      const choice = answer.choices[0]
      return {
        text: choice?.message.content ?? choice?.message.tool_calls?.[0]?.function.arguments ?? "",
        inputTokens: answer.usage?.prompt_tokens ?? 0,
        outputTokens: answer.usage?.completion_tokens ?? 0,
        finish: finishOf(choice?.finish_reason)
      }
    },
    codecTransformer: OpenAiStructuredOutput.toCodecOpenAI
  }, options)
