import { Effect, Option, type Redacted, Schema } from "effect"
import { AiError, type LanguageModel } from "effect/ai"
import type { OutboundGuard } from "../../outbound/OutboundGuard.ts"
import { languageModel, type ModelReply, type ModelRequest } from "./ModelCall.ts"
import { postJson, type ProviderCall, type ProviderHttpClient } from "./ProviderHttp.ts"

/** What a repository's settings give every provider. */
export interface ModelOptions {
  readonly baseUrl: string | null
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly model: string
}

/**
 * One provider's wire format, and only that: the request it posts for a prompt, the answer's
 * Schema and how an answer reads as a reply. The call itself (the guard, retries, errors
 * without the key, decoding) is `wireModel`'s, the same for every provider.
 */
export interface Wire<Answer> {
  readonly provider: string
  readonly method: string
  /** The base URL when the settings give none. */
  readonly defaultBaseUrl: string
  readonly request: (request: ModelRequest, base: string) => Omit<ProviderCall, "provider" | "method">
  readonly answer: Schema.Decoder<Answer>
  /** What the answer is not, when it does not decode ("The answer is not a chat completion"). */
  readonly notAnAnswer: string
  readonly reply: (answer: Answer) => ModelReply
  /** Provider error bodies that mean more than their status (a bad key in a 400). */
  readonly classify?: (status: number, body: string) => AiError.AiErrorReason | undefined
  readonly codecTransformer: LanguageModel.CodecTransformer
}

/** The key's header when there is a key (a local model server may need none). */
export const keyHeader = (
  apiKey: ModelOptions["apiKey"],
  header: (key: Redacted.Redacted<string>) => Record<string, Redacted.Redacted<string>>
): Record<string, Redacted.Redacted<string>> => Option.match(apiKey, { onNone: () => ({}), onSome: header })

/** effect's `LanguageModel` speaking `wire` to the settings' base URL. */
export const wireModel = <Answer>(wire: Wire<Answer>, options: ModelOptions) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<ProviderHttpClient | OutboundGuard>()
    const base = (options.baseUrl ?? wire.defaultBaseUrl).replace(/\/+$/, "")
    const decode = Schema.decodeUnknownEffect(wire.answer)
    const invalid = () =>
      AiError.make({
        module: wire.provider,
        method: wire.method,
        reason: new AiError.InvalidOutputError({ description: wire.notAnAnswer })
      })
    const call = (request: ModelRequest) =>
      postJson({ provider: wire.provider, method: wire.method, ...wire.request(request, base) }, wire.classify).pipe(
        Effect.flatMap((json) => Effect.mapError(decode(json), invalid)),
        Effect.map(wire.reply),
        Effect.provide(context)
      )
    return yield* languageModel({ call, codecTransformer: wire.codecTransformer })
  })
