/** HTML escaping and the one simple layout every Canopy notification uses. */

export const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (char) =>
      char === "&" ? "&amp;" : char === "<" ? "&lt;" : char === ">" ? "&gt;" : char === "\"" ? "&quot;" : "&#39;"
  )

export interface MailLink {
  readonly label: string
  readonly url: string
}

/**
 * A plain, widely-rendered HTML mail: a heading, paragraphs, a table of facts, one button
 * and an optional footer link (unsubscribe). Every value is escaped here.
 */
export const renderMailHtml = (options: {
  readonly heading: string
  readonly accent: string
  readonly paragraphs: ReadonlyArray<string>
  readonly facts?: ReadonlyArray<readonly [string, string]> | undefined
  readonly button?: MailLink | undefined
  readonly footer?: MailLink | undefined
}): string => {
  const facts = (options.facts ?? []).map(([name, value]) =>
    `<tr><td style="padding:4px 12px 4px 0;color:#6b7280">${escapeHtml(name)}</td>` +
    `<td style="padding:4px 0">${escapeHtml(value)}</td></tr>`
  ).join("")
  return [
    `<!doctype html><html><body style="margin:0;background:#f6f7f9;font-family:-apple-system,Segoe UI,Roboto,sans-serif;color:#111827">`,
    `<div style="max-width:560px;margin:24px auto;background:#fff;border-radius:8px;border-top:4px solid ${options.accent};padding:24px">`,
    `<h1 style="font-size:20px;margin:0 0 12px">${escapeHtml(options.heading)}</h1>`,
    ...options.paragraphs.map((text) => `<p style="line-height:1.5;margin:0 0 12px">${escapeHtml(text)}</p>`),
    facts === "" ? "" : `<table style="font-size:14px;margin:8px 0 16px">${facts}</table>`,
    options.button === undefined ? "" : `<p><a href="${escapeHtml(options.button.url)}" ` +
      `style="display:inline-block;background:#111827;color:#fff;padding:10px 16px;border-radius:6px;text-decoration:none">` +
      `${escapeHtml(options.button.label)}</a></p>`,
    `</div>`,
    options.footer === undefined ? "" : `<p style="text-align:center;font-size:12px;color:#6b7280">` +
      `<a style="color:#6b7280" href="${escapeHtml(options.footer.url)}">${escapeHtml(options.footer.label)}</a></p>`,
    `</body></html>`
  ].join("")
}
