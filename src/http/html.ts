import { HttpServerResponse } from "effect/http"

import { escapeHtml } from "../../services/mail/mailLayout.ts"

export { escapeHtml }

/**
 * The HTML shell of every public page: mobile viewport, the status page stylesheet, no
 * third-party asset. `head` and `body` are already-escaped HTML.
 */
export const pageShell = (options: { readonly title: string; readonly head?: string; readonly body: string }) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<link rel="stylesheet" href="/status-assets/status.css">
${options.head ?? ""}
</head>
<body>
${options.body}
</body>
</html>`

export const htmlResponse = (html: string, status = 200) =>
  HttpServerResponse.text(html, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: {
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer"
    }
  })

/** A one-message page (subscription confirmed, unsubscribed, link invalid). */
export const messagePage = (options: {
  readonly title: string
  readonly message: string
  readonly link?: { readonly href: string; readonly label: string } | undefined
}) =>
  pageShell({
    title: options.title,
    body: `<main class="container narrow">
<section class="card message-card">
<h1>${escapeHtml(options.title)}</h1>
<p>${escapeHtml(options.message)}</p>
${
      options.link === undefined
        ? ""
        : `<p><a class="button" href="${escapeHtml(options.link.href)}">${escapeHtml(options.link.label)}</a></p>`
    }
</section>
</main>`
  })
