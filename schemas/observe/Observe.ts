import { Schema } from "effect"
import { eventType } from "../events/Events.ts"
import { IsoTimestamp } from "../monitors/Monitors.ts"

/**
 * Observe: ingested events and spans (spec "Observe event", "Span"), the issues they are
 * grouped into, releases and the ingest acknowledgements (GUIDE §7).
 *
 * Wire choices where the spec is silent:
 * - Unknown fields of an ingested event are dropped, not rejected (SDKs send many).
 * - `environment` and `platform` accept any short string: SDKs send more than the three
 *   values the spec lists.
 * - `message` may be left out of a span event; the span's `name` is used.
 */

const short = (max: number) => Schema.String.check(Schema.isMaxLength(max))
const optionalShort = (max: number) => Schema.optional(short(max))

export const EventLevel = Schema.Literals(["debug", "info", "warning", "error", "fatal", "span"])
export type EventLevel = typeof EventLevel.Type

/** ISO 8601 string, or (spans, Sentry) a number of epoch milliseconds. */
export const EventTimestamp = Schema.Union([
  IsoTimestamp,
  Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
])

/** Source lines around a frame's line, as SDKs send them (Sentry: 5 + 1 + 5, each cut at 140 characters). */
export const MAX_CONTEXT_LINES = 50
export const MAX_CONTEXT_LINE = 2048
const ContextLines = Schema.Array(short(MAX_CONTEXT_LINE)).check(Schema.isMaxLength(MAX_CONTEXT_LINES))

export const StackFrame = Schema.Struct({
  filename: optionalShort(2048),
  abs_path: optionalShort(2048),
  module: optionalShort(1024),
  function: optionalShort(1024),
  lineno: Schema.optional(Schema.Int),
  colno: Schema.optional(Schema.Int),
  in_app: Schema.optional(Schema.Boolean),
  pre_context: Schema.optional(ContextLines),
  context_line: optionalShort(MAX_CONTEXT_LINE),
  post_context: Schema.optional(ContextLines)
})
export type StackFrame = typeof StackFrame.Type

export const ExceptionInfo = Schema.Struct({
  type: optionalShort(512),
  value: optionalShort(16_384),
  stacktrace: Schema.optional(Schema.Struct({
    frames: Schema.Array(StackFrame).check(Schema.isMaxLength(500))
  }))
})

export const Breadcrumb = Schema.Struct({
  // Kept as sent (display only): no date parsing for every breadcrumb of every event.
  timestamp: Schema.optional(Schema.Union([short(64), Schema.Finite])),
  category: optionalShort(256),
  message: optionalShort(8192),
  level: optionalShort(32)
})

export const SpanStatus = Schema.Literals(["ok", "error"])

export const Span = Schema.Struct({
  traceId: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128)),
  spanId: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128)),
  parentId: optionalShort(128),
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1024)),
  durationMs: Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)),
  status: SpanStatus
})
export type Span = typeof Span.Type

export const MAX_CONTEXTS = 50

/** One ingested event, as validated (each entry of a batch on its own). */
export const ObserveEvent = Schema.Struct({
  message: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(16_384))),
  event_id: optionalShort(64),
  level: Schema.optional(EventLevel),
  timestamp: Schema.optional(EventTimestamp),
  platform: optionalShort(64),
  sdk: Schema.optional(Schema.Struct({ name: optionalShort(128), version: optionalShort(64) })),
  exception: Schema.optional(ExceptionInfo),
  environment: optionalShort(64),
  release: optionalShort(200),
  user: Schema.optional(Schema.Struct({
    id: optionalShort(256),
    email: optionalShort(256),
    username: optionalShort(256),
    ip_address: optionalShort(64)
  })),
  tags: Schema.optional(Schema.Record(Schema.String, short(1024)).check(Schema.isMaxProperties(100))),
  extra: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
  /** Sentry's `contexts` (runtime, os, device, trace, app, …): kept as sent, shown on the event. */
  contexts: Schema.optional(Schema.Record(Schema.String, Schema.Unknown).check(Schema.isMaxProperties(MAX_CONTEXTS))),
  breadcrumbs: Schema.optional(Schema.Array(Breadcrumb).check(Schema.isMaxLength(200))),
  span: Schema.optional(Span),
  fingerprint: Schema.optional(Schema.Array(short(512)).check(Schema.isMinLength(1), Schema.isMaxLength(20)))
})
export type ObserveEvent = typeof ObserveEvent.Type

export const MAX_BATCH = 1000

// --- acknowledgements ---------------------------------------------------------------------

export const SingleAccepted = Schema.Struct({ id: Schema.String, status: Schema.Literal("accepted") })
export const BatchAccepted = Schema.Struct({
  success: Schema.Boolean,
  accepted: Schema.Int,
  message: Schema.String,
  rejected: Schema.optional(Schema.Array(Schema.Struct({ index: Schema.Int, error: Schema.String })))
})

// --- issues, events, releases ---------------------------------------------------------------

export const IssueStatus = Schema.Literals(["unresolved", "resolved", "ignored"])
export type IssueStatus = typeof IssueStatus.Type

export const Issue = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  type: Schema.NullOr(Schema.String),
  culprit: Schema.NullOr(Schema.String),
  level: Schema.String,
  status: IssueStatus,
  fingerprint: Schema.String,
  count: Schema.Int,
  users: Schema.Int,
  firstSeen: Schema.String,
  lastSeen: Schema.String,
  firstRelease: Schema.NullOr(Schema.String),
  lastRelease: Schema.NullOr(Schema.String),
  environments: Schema.Array(Schema.String),
  releases: Schema.Array(Schema.String),
  resolvedAt: Schema.NullOr(Schema.String)
})
export type Issue = typeof Issue.Type

export const IssueList = Schema.Struct({ issues: Schema.Array(Issue), count: Schema.Int })

const limitParam = Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))
const offsetParam = Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))

export const ListIssuesQuery = Schema.Struct({
  status: Schema.optional(IssueStatus),
  release: optionalShort(200),
  environment: optionalShort(64),
  level: Schema.optional(EventLevel),
  sort: Schema.optional(Schema.Literals(["lastSeen", "firstSeen", "count"])),
  limit: limitParam,
  offset: offsetParam
})
export type ListIssuesQuery = typeof ListIssuesQuery.Type

export const UpdateIssue = Schema.Struct({ status: IssueStatus })

export const StoredEvent = Schema.Struct({
  id: Schema.String,
  issueId: Schema.NullOr(Schema.String),
  eventId: Schema.NullOr(Schema.String),
  level: Schema.String,
  message: Schema.String,
  timestamp: Schema.String,
  receivedAt: Schema.String,
  release: Schema.NullOr(Schema.String),
  environment: Schema.NullOr(Schema.String),
  /** How many ingested events this stored one stands for (1 unless sampled). */
  sampleWeight: Schema.Number,
  data: Schema.Unknown
})
export type StoredEvent = typeof StoredEvent.Type

export const EventList = Schema.Struct({ events: Schema.Array(StoredEvent), count: Schema.Int })
export const ListEventsQuery = Schema.Struct({ limit: limitParam, offset: offsetParam })

export const Release = Schema.Struct({
  version: Schema.String,
  events: Schema.Int,
  errors: Schema.Int,
  errorsPerMinute: Schema.Number,
  spans: Schema.Int,
  errorSpans: Schema.Int,
  /** Share of the release's spans with status `error`, 0..1; null without spans. */
  errorShare: Schema.NullOr(Schema.Number),
  newIssues: Schema.Int,
  firstSeen: Schema.String,
  lastSeen: Schema.String
})
export type Release = typeof Release.Type

export const ReleaseList = Schema.Struct({ releases: Schema.Array(Release), count: Schema.Int })

// --- spike alerts ----------------------------------------------------------------------------

export const Alert = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("spike"),
  /** The organization's events as a whole, or one issue's. */
  scope: Schema.Literals(["organization", "issue"]),
  issueId: Schema.NullOr(Schema.String),
  /** Error events in the 5 minutes that opened the spike. */
  count: Schema.Int,
  /** Average 5-minute count over the hour before. */
  baseline: Schema.Number,
  threshold: Schema.Number,
  createdAt: Schema.String
})
export type Alert = typeof Alert.Type

export const AlertList = Schema.Struct({ alerts: Schema.Array(Alert), count: Schema.Int })
export const ListAlertsQuery = Schema.Struct({ limit: limitParam, offset: offsetParam })

// --- domain events -----------------------------------------------------------------------------

const IssueRef = Schema.Struct({ issueId: Schema.String })
/** A new fingerprint opened an issue. */
export const IssueCreatedEvent = eventType("observe.issue.created", IssueRef)
/** A new event reopened a resolved issue. */
export const IssueRegressedEvent = eventType("observe.issue.regressed", IssueRef)
/** Someone changed an issue's status. */
export const IssueUpdatedEvent = eventType(
  "observe.issue.updated",
  Schema.Struct({ issueId: Schema.String, status: IssueStatus })
)
/** A spike opened (GUIDE §7): live stream, owners' e-mail, webhooks. */
export const SpikeEvent = eventType(
  "observe.spike",
  Schema.Struct({
    alertId: Schema.String,
    scope: Schema.Literals(["organization", "issue"]),
    issueId: Schema.NullOr(Schema.String),
    count: Schema.Int,
    baseline: Schema.Number,
    threshold: Schema.Number
  })
)
export type SpikeEventData = typeof SpikeEvent.data.Type
