/**
 * Entry of an ingest preparation worker (`PreparationWorkers.ts`): parses a request body
 * and prepares its rows with the server's own code (`EventRows.ts`), without source maps
 * (the server re-prepares the few events whose release has maps). Loaded by Node itself
 * (type stripping): erasable TypeScript only, here and in what it imports.
 */
import { serve } from "../platform/WorkerEntry.ts"
import { bodyEntries, notJsonMessage, parseBody, prepareRows } from "./EventRows.ts"
import type { BodyPreparation, PrepareBody } from "./PreparationWorkers.ts"

serve<PrepareBody, BodyPreparation>(({ bytes, receivedAt }) => {
  const parsed = parseBody(bytes)
  if (parsed === undefined) return { response: { invalid: notJsonMessage } }
  const split = bodyEntries(parsed.body)
  if ("invalid" in split) return { response: split }
  return { response: { ...prepareRows(split.entries, receivedAt), single: split.single } }
})
