import { Effect, Layer } from "effect"
import { ProtectedBranches } from "../git/Repositories.ts"
import { AuditLog } from "./AuditLog.ts"
import { BranchRulesLive } from "./BranchRulesLive.ts"
import { CommitStatuses } from "./CommitStatuses.ts"
import { GpgKeys } from "./GpgKeys.ts"
import { ProtectionRules } from "./ProtectionRules.ts"
import { PushProtectionLive } from "./PushProtection.ts"

/**
 * Branch protection, wired: its services, plus the two references it fills app-wide, the
 * push hook (`RefUpdateCheck`) and the merge engine's seam (`BranchRules`). Needs SQL.
 */
export const ProtectionLive = Layer.mergeAll(
  PushProtectionLive,
  BranchRulesLive,
  Layer.effect(ProtectedBranches, Effect.map(ProtectionRules, (rules) => rules.protectedAmong))
).pipe(
  Layer.provideMerge(Layer.mergeAll(ProtectionRules.layer, CommitStatuses.layer, GpgKeys.layer, AuditLog.layer))
)
