import type { Option, Redacted } from "effect"
import type { ModelProvider } from "../../../schemas/ai/AiSettings.ts"
import { makeAnthropicModel } from "./AnthropicModel.ts"
import { makeGoogleModel } from "./GoogleModel.ts"
import { makeOpenAiModel } from "./OpenAiModel.ts"

/** The `LanguageModel` of a repository's settings. */
export const makeModel = (provider: ModelProvider, options: {
  readonly baseUrl: string | null
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly model: string
}) =>
  provider === "openai"
    ? makeOpenAiModel(options)
    : provider === "anthropic"
    ? makeAnthropicModel(options)
    : makeGoogleModel(options)
