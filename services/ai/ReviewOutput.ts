import type { ModelAnswer, ModelSuggestion, Sentiment, Severity } from "../../schemas/ai/AiReviews.ts"
import type { ChangedFile } from "../../schemas/pulls/PullRequests.ts"
import { newSideLines } from "../pulls/PullDiff.ts"
import { MAX_SUGGESTIONS, type PriorComment } from "./ReviewPrompt.ts"

/**
 * What is kept of the model's answers (GUIDE §15), pure: suggestions inside the diff's new
 * side only, no style or naming nits, nothing on lines an earlier review already spoke
 * about, at most ten, most severe first; several calls' answers merged into one.
 */

const RANK: Record<Severity, number> = { critical: 0, warning: 1, info: 2 }
const SENTIMENT_RANK: Record<Sentiment, number> = { needs_work: 0, neutral: 1, positive: 2 }
/** Replacements longer than this are not offered as one-click suggestions. */
export const MAX_REPLACEMENT_LINES = 20

const NIT = /\b(nit|naming|rename|style|formatting|whitespace|indentation|typo|spelling|semicolon|trailing comma)\b/i

const overlaps = (a: { startLine: number; endLine: number }, b: { startLine: number; endLine: number }) =>
  a.startLine <= b.endLine && b.startLine <= a.endLine

export const keepSuggestions = (
  suggestions: ReadonlyArray<ModelSuggestion>,
  files: ReadonlyArray<ChangedFile>,
  prior: ReadonlyArray<PriorComment>
): ReadonlyArray<ModelSuggestion> => {
  // Only the files suggestions name are read line by line (a diff may have thousands).
  const byPath = new Map(files.map((file) => [file.path, file]))
  const shown = new Map<string, ReadonlySet<number>>()
  const linesOf = (path: string) => {
    const file = byPath.get(path)
    if (file === undefined) return undefined
    let lines = shown.get(path)
    if (lines === undefined) shown.set(path, lines = newSideLines(file.patch))
    return lines
  }
  const kept: Array<ModelSuggestion> = []
  for (const raw of suggestions) {
    const s = { ...raw, endLine: Math.max(raw.startLine, raw.endLine) }
    const lines = linesOf(s.path)
    if (lines === undefined || !Number.isInteger(s.startLine) || s.startLine < 1) continue
    let inside = true
    for (let n = s.startLine; n <= s.endLine && inside; n++) inside = lines.has(n)
    if (!inside) continue
    if (s.severity !== "critical" && NIT.test(s.title)) continue
    if (prior.some((p) => p.path === s.path && overlaps(p, s))) continue
    if (kept.some((k) => k.path === s.path && overlaps(k, s))) continue
    const replacement = s.replacement !== null && s.replacement.split("\n").length > MAX_REPLACEMENT_LINES
      ? null
      : s.replacement
    kept.push({ ...s, replacement })
  }
  return kept
    .map((s, i) => ({ s, i }))
    .sort((a, b) => RANK[a.s.severity] - RANK[b.s.severity] || a.i - b.i)
    .slice(0, MAX_SUGGESTIONS)
    .map(({ s }) => s)
}

/** The new-side lines a patch shows, by number, with their text (no git call needed). */
export const newSideText = (patch: string): ReadonlyMap<number, string> => {
  const lines = new Map<number, string>()
  let next = 0
  for (const line of patch.split("\n")) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line)
    if (hunk !== null) {
      next = Number(hunk[1])
      continue
    }
    if (next === 0 || line.startsWith("\\") || line.startsWith("-")) continue
    lines.set(next, line.slice(1))
    next++
  }
  return lines
}

/** The lines each suggestion replaces, as the diff shows them at the head. */
export const originalLines = (
  kept: ReadonlyArray<ModelSuggestion>,
  files: ReadonlyArray<ChangedFile>
): ReadonlyArray<ReadonlyArray<string>> => {
  const byPath = new Map(files.map((file) => [file.path, file]))
  const shown = new Map<string, ReadonlyMap<number, string>>()
  return kept.map((s) => {
    let text = shown.get(s.path)
    const file = byPath.get(s.path)
    if (text === undefined && file !== undefined) shown.set(s.path, text = newSideText(file.patch))
    return Array.from({ length: s.endLine - s.startLine + 1 }, (_, i) => text?.get(s.startLine + i) ?? "")
  })
}

/** Several calls' answers as one: the least favourable sentiment, the summaries joined. */
export const mergeAnswers = (answers: ReadonlyArray<ModelAnswer>): ModelAnswer => ({
  summary: answers.map((a) => a.summary.trim()).filter((s) => s !== "").join("\n\n"),
  overallSentiment: answers.reduce<Sentiment>(
    (worst, a) => SENTIMENT_RANK[a.overallSentiment] < SENTIMENT_RANK[worst] ? a.overallSentiment : worst,
    "positive"
  ),
  suggestions: answers.flatMap((a) => a.suggestions)
})

/** The inline comment of a suggestion, with a ```suggestion block when it has a replacement. */
export const commentBody = (s: ModelSuggestion): string => {
  const head = `**${s.severity.toUpperCase()}** · ${s.category.replace("_", " ")} · ${s.title}\n\n${s.body.trim()}`
  return s.replacement === null ? head : `${head}\n\n\`\`\`suggestion\n${s.replacement.replace(/\n$/, "")}\n\`\`\``
}
