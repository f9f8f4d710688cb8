import { Effect, Option, Redacted, Schema } from "effect"
import { AiError, OpenAiStructuredOutput } from "effect/ai"
import { OutboundGuard } from "../../outbound/OutboundGuard.ts"
import { languageModel, type ModelRequest } from "./ModelCall.ts"
import { postJson, type ProviderCall, ProviderHttpClient } from "./ProviderHttp.ts"

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
const decodeAnswer = Schema.decodeUnknownEffect(Answer)

const finishOf = (reason: string | null | undefined) =>
  reason === "stop" ? "stop" : reason === "length" ? "length" : reason === "tool_calls" ? "tool-calls" : "other"

export const makeOpenAiModel = (options: {
  readonly baseUrl: string | null
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly model: string
}) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<ProviderHttpClient | OutboundGuard>()
    const base = (options.baseUrl ?? OPENAI_BASE_URL).replace(/\/+$/, "")
    const call = (request: ModelRequest) =>
      Effect.gen(function*() {
        const http: ProviderCall = {
          provider: "openai",
          method: "chat.completions",
          url: `${base}/chat/completions`,
          headers: Option.match(options.apiKey, {
            onNone: () => ({}),
            onSome: (key) => ({ authorization: Redacted.make(`Bearer ${Redacted.value(key)}`) })
          }),
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
        }
        const json = yield* postJson(http)
        const answer = yield* decodeAnswer(json).pipe(
          Effect.mapError(() =>
            AiError.make({
              module: "openai",
              method: "chat.completions",
              reason: new AiError.InvalidOutputError({ description: "The answer is not a chat completion" })
            })
          )
        )
        const choice = answer.choices[0]
        const text = choice?.message.content ?? choice?.message.tool_calls?.[0]?.function.arguments ?? ""
        return {
          text,
          inputTokens: answer.usage?.prompt_tokens ?? 0,
          outputTokens: answer.usage?.completion_tokens ?? 0,
          finish: finishOf(choice?.finish_reason)
        } as const
      }).pipe(Effect.provide(context))
    return yield* languageModel({ call, codecTransformer: OpenAiStructuredOutput.toCodecOpenAI })
  })
