import type { AiError } from "effect/ai"

/**
 * A failed review's `error` (GUIDE §15): one sentence an organization can act on, built
 * from the reason only, never from the provider's body or headers (which may echo the key).
 */
export const errorSentence = (provider: string, error: AiError.AiError): string => {
  const reason = error.reason
  switch (reason._tag) {
    case "AuthenticationError":
      return `The ${provider} provider refused the API key (${
        reason.description ?? "authentication failed"
      }); set a valid apiKey in the AI settings.`
    case "QuotaExhaustedError":
      return `The ${provider} provider says the key's quota is exhausted; check the account's billing or limits.`
    case "RateLimitError":
      return `The ${provider} provider kept rate-limiting the review (HTTP 429) after 3 retries; try again later.`
    case "InternalProviderError":
      return `The ${provider} provider failed (${reason.description}) after 3 retries; try again later.`
    case "NetworkError":
      return reason.description ?? `The ${provider} provider could not be reached.`
    case "InvalidRequestError":
      return reason.description?.startsWith("The provider") === true
        ? reason.description
        : `The ${provider} provider rejected the request (${
          reason.description ?? "invalid request"
        }); check modelName and baseUrl.`
    case "StructuredOutputError":
    case "InvalidOutputError":
      return `The model's answer did not match the review format; try another model.`
    case "ContentPolicyError":
      return `The ${provider} provider declined the request under its content policy.`
    default:
      return `The ${provider} provider failed (${reason._tag}).`
  }
}
