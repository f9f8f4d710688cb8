import { Schema } from "effect"
import { AiError, LanguageModel } from "effect/ai"
import { keyHeader, type ModelOptions, wireModel } from "./WireModel.ts"

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

const finishOf = (reason: string | undefined) =>
  reason === "STOP" ? "stop" : reason === "MAX_TOKENS" ? "length" : reason === "SAFETY" ? "content-filter" : "other"

/** Google answers a bad key with 400 `API_KEY_INVALID`, and quota with `RESOURCE_EXHAUSTED`. */
const classify = (status: number, body: string): AiError.AiErrorReason | undefined => {
  if (status === 400 && /API_KEY_INVALID|API key not valid/.test(body)) {
    return new AiError.AuthenticationError({ kind: "InvalidKey", description: `HTTP ${status}` })
  }
  return undefined
}

export const makeGoogleModel = (options: ModelOptions) => {
  const model = options.model.replace(/^models\//, "")
  return wireModel({
    provider: "google",
    method: "generateContent",
    defaultBaseUrl: GOOGLE_BASE_URL,
    request: (request, base) => ({
      url: `${base}/v1beta/models/${encodeURIComponent(model)}:generateContent`,
      headers: keyHeader(options.apiKey, (key) => ({ "x-goog-api-key": key })),
      body: {
        ...(request.system === "" ? {} : { systemInstruction: { parts: [{ text: request.system }] } }),
        contents: [{ role: "user", parts: [{ text: request.user }] }],
        ...(request.json === undefined ? {} : {
          generationConfig: { responseMimeType: "application/json", responseJsonSchema: request.json.schema }
        })
      }
    }),
    answer: Answer,
    notAnAnswer: "The answer is not a generateContent response",
    reply: (answer) => {
      const candidate = answer.candidates?.[0]
      const parts = candidate?.content?.parts ?? []
      const call = parts.find((part) => part.functionCall !== undefined)
      return {
        text: call !== undefined
          ? JSON.stringify(call.functionCall?.args ?? {})
          : parts.map((part) => part.text ?? "").join(""),
        inputTokens: answer.usageMetadata?.promptTokenCount ?? 0,
        outputTokens: answer.usageMetadata?.candidatesTokenCount ?? 0,
        finish: finishOf(candidate?.finishReason)
      }
    },
    classify,
    codecTransformer: LanguageModel.defaultCodecTransformer
  }, options)
}
