import platform from "./0001_platform.ts"
import monitoring from "./0002_monitoring.ts"
import incidents from "./0003_incidents.ts"
import notifications from "./0004_notifications.ts"
import observe from "./0005_observe.ts"
import observePerformance from "./0006_observe_performance.ts"
import git from "./0007_git.ts"
import webhooks from "./0008_webhooks.ts"
import monitorShards from "./0009_monitor_shards.ts"
import repositoryNumbers from "./0010_repository_numbers.ts"
import pullRequests from "./0011_pull_requests.ts"
import repositoryIssues from "./0012_repository_issues.ts"
import branchProtection from "./0013_branch_protection.ts"
import outboxHorizon from "./0014_outbox_horizon.ts"
import observeEventReferences from "./0016_observe_event_references.ts"
import webhookLogLean from "./0017_webhook_log_lean.ts"
import observeHotCounters from "./0018_observe_hot_counters.ts"
import webhookQueue from "./0019_webhook_queue.ts"
import observeIssuePending from "./0020_observe_issue_pending.ts"
import ci from "./0030_ci.ts"
import aiReview from "./0040_ai_review.ts"
import suggestionAppliedBy from "./0045_suggestion_applied_by.ts"
import repositoryLifecycle from "./0050_repository_lifecycle.ts"
import webhookSubscribedFrom from "./0070_webhook_subscribed_from.ts"
import incidentMaintenanceWindow from "./0080_incident_maintenance_window.ts"
import ciCaches from "./0100_ci_caches.ts"
import organizationLogo from "./0120_organization_logo.ts"
import eventTraceparent from "./0140_event_traceparent.ts"

/** Every migration, keyed `<id>_<name>`; the migrator applies the missing ones in order. */
export const migrations = {
  "0001_platform": platform,
  "0002_monitoring": monitoring,
  "0003_incidents": incidents,
  "0004_notifications": notifications,
  "0005_observe": observe,
  "0006_observe_performance": observePerformance,
  "0007_git": git,
  "0008_webhooks": webhooks,
  "0009_monitor_shards": monitorShards,
  "0010_repository_numbers": repositoryNumbers,
  "0011_pull_requests": pullRequests,
  "0012_repository_issues": repositoryIssues,
  "0013_branch_protection": branchProtection,
  "0014_outbox_horizon": outboxHorizon,
  "0016_observe_event_references": observeEventReferences,
  "0017_webhook_log_lean": webhookLogLean,
  "0018_observe_hot_counters": observeHotCounters,
  "0019_webhook_queue": webhookQueue,
  "0020_observe_issue_pending": observeIssuePending,
  "0030_ci": ci,
  "0040_ai_review": aiReview,
  "0045_suggestion_applied_by": suggestionAppliedBy,
  "0050_repository_lifecycle": repositoryLifecycle,
  "0070_webhook_subscribed_from": webhookSubscribedFrom,
  "0080_incident_maintenance_window": incidentMaintenanceWindow,
  "0100_ci_caches": ciCaches,
  "0120_organization_logo": organizationLogo,
  "0140_event_traceparent": eventTraceparent
}
