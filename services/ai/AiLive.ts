import { Layer } from "effect"
import { OutboundGuard } from "../outbound/OutboundGuard.ts"
import { AiReviews } from "./AiReviews.ts"
import { AiReviewGateLive, AiSettings } from "./AiSettings.ts"
import { AiSuggestions } from "./AiSuggestions.ts"
import { Autonomy } from "./Autonomy.ts"
import { BotUser } from "./BotUser.ts"
import { ProviderHttpClient } from "./providers/ProviderHttp.ts"
import { ReviewRun } from "./ReviewRun.ts"
import { ReviewRunner } from "./ReviewRunner.ts"

/**
 * AI review's services (GUIDE §15): settings, the review runner, suggestions, autonomy and the
 * merge gate. Its consumer of pull request events is an entity-side layer (`AiReviewSignals`).
 */
export const AiLive = AiReviewGateLive.pipe(
  Layer.provideMerge(Layer.mergeAll(AiReviews.layer, AiSuggestions.layer)),
  Layer.provideMerge(ReviewRunner.layer),
  Layer.provideMerge(Layer.mergeAll(ReviewRun.layer, Autonomy.layer)),
  Layer.provideMerge(Layer.mergeAll(AiSettings.layer, BotUser.layer, ProviderHttpClient.layer)),
  Layer.provideMerge(OutboundGuard.layerFromConfig)
)
