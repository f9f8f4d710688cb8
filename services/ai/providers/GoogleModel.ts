import { Effect, Option, Schema } from "effect"
import type { Redacted } from "effect"
import { AiError, LanguageModel } from "effect/ai"
import type { OutboundGuard } from "../../outbound/OutboundGuard.ts"
import { languageModel, type ModelRequest } from "./ModelCall.ts"
import { postJson, type ProviderCall, type ProviderHttpClient } from "./ProviderHttp.ts"

/**
 * Google generateContent (`POST {baseUrl}/v1beta/models/{model}:generateContent`, the key
 * in `x-goog-api-key`, never in the URL). Structured output with `responseMimeType:
 * application/json` and `responseJsonSchema`; a function-call answer is read from its args.
 */

export const GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com"

const Part = Schema.Struct({
  text: Schema.optional(Schema.String),
  functionCall: Schema.optional(Schema.Struct({ args: Schema.optional(Schema.Unknown) }))
})
const Answer = Schema.Struct({
  candidates: Schema.optional(Schema.Array(Schema.Struct({
    content: Schema.optional(Schema.Struct({ parts: Schema.optional(Schema.Array(Part)) })),
    finishReason: Schema.optional(Schema.String)
  }))),
  usageMetadata: Schema.optional(Schema.Struct({
    promptTokenCount: Schema.optional(Schema.Number),
    candidatesTokenCount: Schema.optional(Schema.Number)
  }))
})
const decodeAnswer = Schema.decodeUnknownEffect(Answer)

const finishOf = (reason: string | undefined) =>
  reason === "STOP" ? "stop" : reason === "MAX_TOKENS" ? "length" : reason === "SAFETY" ? "content-filter" : "other"

/** Google answers a bad key with 400 `API_KEY_INVALID`, and quota with `RESOURCE_EXHAUSTED`. */
const classify = (status: number, body: string): AiError.AiErrorReason | undefined => {
  if (status === 400 && /API_KEY_INVALID|API key not valid/.test(body)) {
    return new AiError.AuthenticationError({ kind: "InvalidKey", description: `HTTP ${status}` })
  }
  return undefined
}

export const makeGoogleModel = (options: {
  readonly baseUrl: string | null
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly model: string
}) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<ProviderHttpClient | OutboundGuard>()
    const base = (options.baseUrl ?? GOOGLE_BASE_URL).replace(/\/+$/, "")
    const model = options.model.replace(/^models\//, "")
    const call = (request: ModelRequest) =>
      Effect.gen(function*() {
        const http: ProviderCall = {
          provider: "google",
          method: "generateContent",
          url: `${base}/v1beta/models/${encodeURIComponent(model)}:generateContent`,
          headers: Option.match(options.apiKey, {
            onNone: () => ({}),
            onSome: (key) => ({ "x-goog-api-key": key })
          }),
          body: {
            ...(request.system === "" ? {} : { systemInstruction: { parts: [{ text: request.system }] } }),
            contents: [{ role: "user", parts: [{ text: request.user }] }],
            ...(request.json === undefined ? {} : {
              generationConfig: { responseMimeType: "application/json", responseJsonSchema: request.json.schema }
            })
          }
        }
        const json = yield* postJson(http, classify)
        const answer = yield* decodeAnswer(json).pipe(
          Effect.mapError(() =>
            AiError.make({
              module: "google",
              method: "generateContent",
              reason: new AiError.InvalidOutputError({ description: "The answer is not a generateContent response" })
            })
          )
        )
        const candidate = answer.candidates?.[0]
        const parts = candidate?.content?.parts ?? []
        const call = parts.find((part) => part.functionCall !== undefined)
        const text = call !== undefined
          ? JSON.stringify(call.functionCall?.args ?? {})
          : parts.map((part) => part.text ?? "").join("")
        return {
          text,
          inputTokens: answer.usageMetadata?.promptTokenCount ?? 0,
          outputTokens: answer.usageMetadata?.candidatesTokenCount ?? 0,
          finish: finishOf(candidate?.finishReason)
        } as const
      }).pipe(Effect.provide(context))
    return yield* languageModel({ call, codecTransformer: LanguageModel.defaultCodecTransformer })
  })
