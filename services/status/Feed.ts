import type { Incident } from "../../schemas/incidents/Incidents.ts"

/**
 * The RSS 2.0 incident feed of a status page (spec "GET /api/v1/feed/{slug}", GUIDE §6):
 * the 50 newest incidents, `pubDate` the incident's `updatedAt` (RFC 822), `guid` the
 * incident id (not a permalink), the description the timeline newest first.
 */

export const FEED_ITEMS = 50

/** Characters XML 1.0 cannot carry at all (control characters other than tab and line breaks). */

const notXml = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g

/** Text for an XML element or attribute: escaped, and without characters XML forbids. */
export const escapeXml = (text: string): string =>
  text.replace(notXml, "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;"
  ).replace(/'/g, "&apos;")

/** RFC 822 date as RSS wants it: `Mon, 23 Nov 2026 09:00:00 GMT`. */
export const rfc822 = (iso: string): string => new Date(iso).toUTCString()

const statusLabel: Record<Incident["status"], string> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved"
}

export interface FeedInput {
  readonly orgName: string
  /** The public status page, e.g. `https://status.example.com/status/acme`. */
  readonly pageUrl: string
  /** This feed's own URL (`atom:link rel="self"`). */
  readonly feedUrl: string
  /** Newest first. */
  readonly incidents: ReadonlyArray<Incident>
}

const item = (pageUrl: string, incident: Incident) => {
  const timeline = [...incident.updates].reverse().map((update) =>
    `${statusLabel[update.status]} (${rfc822(update.createdAt)}): ${update.message}`
  ).join("\n")
  return [
    "<item>",
    `<title>${escapeXml(`${incident.title} [${statusLabel[incident.status]}]`)}</title>`,
    `<link>${escapeXml(`${pageUrl}#${incident.id}`)}</link>`,
    `<description>${escapeXml(timeline)}</description>`,
    `<pubDate>${rfc822(incident.updatedAt)}</pubDate>`,
    `<guid isPermaLink="false">${escapeXml(incident.id)}</guid>`,
    "</item>"
  ].join("")
}

export const renderFeed = (input: FeedInput): string =>
  [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">`,
    "<channel>",
    `<title>${escapeXml(`${input.orgName} status`)}</title>`,
    `<link>${escapeXml(input.pageUrl)}</link>`,
    `<description>${escapeXml(`Incidents and maintenance of ${input.orgName}`)}</description>`,
    `<atom:link href="${escapeXml(input.feedUrl)}" rel="self" type="application/rss+xml"/>`,
    // The feed changes when an incident does: the same content, the same bytes (ETag-friendly).
    ...(input.incidents.length === 0 ? [] : [
      `<lastBuildDate>${
        new Date(Math.max(...input.incidents.map((incident) => Date.parse(incident.updatedAt)))).toUTCString()
      }</lastBuildDate>`
    ]),
    ...input.incidents.map((incident) => item(input.pageUrl, incident)),
    "</channel>",
    "</rss>"
  ].join("\n")
