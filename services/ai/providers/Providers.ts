import type { ModelProvider } from "../../../schemas/ai/AiSettings.ts"
import { makeAnthropicModel } from "./AnthropicModel.ts"
import { makeGoogleModel } from "./GoogleModel.ts"
import { makeOpenAiModel } from "./OpenAiModel.ts"
import type { ModelOptions } from "./WireModel.ts"

/** The `LanguageModel` of a repository's settings. */
export const makeModel = (provider: ModelProvider, options: ModelOptions) =>
  provider === "openai"
    ? makeOpenAiModel(options)
    : provider === "anthropic"
    ? makeAnthropicModel(options)
    : makeGoogleModel(options)
