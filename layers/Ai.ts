import { Layer } from "effect"
import { AiReviews } from "../services/ai/AiReviews.ts"
import { AiReviewGateLive, AiSettings } from "../services/ai/AiSettings.ts"
import { AiSuggestions } from "../services/ai/AiSuggestions.ts"
import { Autonomy } from "../services/ai/Autonomy.ts"
import { BotUser } from "../services/ai/BotUser.ts"
import { ProviderHttpClient } from "../services/ai/providers/ProviderHttp.ts"
import { ReviewRun } from "../services/ai/ReviewRun.ts"
import { ReviewRunner } from "../services/ai/ReviewRunner.ts"
import { OutboundGuard } from "../services/outbound/OutboundGuard.ts"
import { AiReviewSignals } from "../src/entities/ai/AiReviewSignals.ts"

/** AI review (GUIDE §15): settings, the review runner and its consumer of pull request events. */
export const AiLive = Layer.mergeAll(AiReviewSignals, AiReviewGateLive).pipe(
  Layer.provideMerge(Layer.mergeAll(AiReviews.layer, AiSuggestions.layer)),
  Layer.provideMerge(ReviewRunner.layer),
  Layer.provideMerge(Layer.mergeAll(ReviewRun.layer, Autonomy.layer)),
  Layer.provideMerge(Layer.mergeAll(AiSettings.layer, BotUser.layer, ProviderHttpClient.layer)),
  Layer.provideMerge(OutboundGuard.layerFromConfig)
)
