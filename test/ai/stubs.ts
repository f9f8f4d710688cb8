import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * Loopback stubs of the three providers, speaking their real wire formats (OpenAI chat
 * completions, Anthropic messages, Google generateContent), answers and error bodies
 * included. Each records the requests it got; a test queues special answers (an error, a
 * 429 with `Retry-After`, a held answer), else the stub answers with `review`.
 */

export type ProviderName = "openai" | "anthropic" | "google"

export interface StubRequest {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: any
  /** The whole prompt the request carried, as text. */
  readonly prompt: string
}

export interface Reply {
  readonly status: number
  readonly body: unknown
  readonly headers?: Record<string, string>
  /** Answer only once this settles (a slow model). */
  readonly hold?: Promise<void>
}

export interface ReviewAnswer {
  readonly summary: string
  readonly overallSentiment: "positive" | "neutral" | "needs_work"
  readonly suggestions: ReadonlyArray<{
    readonly path: string
    readonly startLine: number
    readonly endLine: number
    readonly severity: "critical" | "warning" | "info"
    readonly category: "security" | "performance" | "best_practice" | "bug" | "refactor"
    readonly title: string
    readonly body: string
    readonly replacement: string | null
  }>
}

const USAGE = { input: 321, output: 54 }

/** A successful answer carrying `answer`, in the provider's format (tool-call style with `asTool`). */
export const success = (provider: ProviderName, answer: ReviewAnswer, asTool = false): Reply => {
  const json = JSON.stringify(answer)
  if (provider === "openai") {
    return {
      status: 200,
      body: {
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1_764_000_000,
        model: "stub",
        choices: [{
          index: 0,
          message: asTool
            ? {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_1", type: "function", function: { name: "code_review", arguments: json } }]
            }
            : { role: "assistant", content: json },
          finish_reason: asTool ? "tool_calls" : "stop"
        }],
        usage: { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output }
      }
    }
  }
  if (provider === "anthropic") {
    return {
      status: 200,
      body: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "stub",
        content: asTool
          ? [{ type: "tool_use", id: "toolu_1", name: "code_review", input: answer }]
          : [{ type: "text", text: json }],
        stop_reason: asTool ? "tool_use" : "end_turn",
        usage: { input_tokens: USAGE.input, output_tokens: USAGE.output }
      }
    }
  }
  return {
    status: 200,
    body: {
      candidates: [{
        content: {
          role: "model",
          parts: asTool ? [{ functionCall: { name: "code_review", args: answer } }] : [{ text: json }]
        },
        finishReason: "STOP",
        index: 0
      }],
      usageMetadata: {
        promptTokenCount: USAGE.input,
        candidatesTokenCount: USAGE.output,
        totalTokenCount: USAGE.input + USAGE.output
      }
    }
  }
}

/** The provider's answer to a refused key (the OpenAI one echoes part of the key, as OpenAI does). */
export const refusedKey = (provider: ProviderName, key: string): Reply =>
  provider === "openai"
    ? {
      status: 401,
      body: {
        error: {
          message: `Incorrect API key provided: ${key}. You can find your API key at https://platform.openai.com.`,
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key"
        }
      }
    }
    : provider === "anthropic"
    ? {
      status: 401,
      body: { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${key}` } }
    }
    : {
      status: 400,
      body: {
        error: {
          code: 400,
          message: "API key not valid. Please pass a valid API key.",
          status: "INVALID_ARGUMENT",
          details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID" }]
        }
      }
    }

export const rateLimited = (provider: ProviderName, retryAfter: string): Reply => ({
  status: 429,
  headers: { "retry-after": retryAfter },
  body: provider === "openai"
    ? { error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" } }
    : provider === "anthropic"
    ? { type: "error", error: { type: "rate_limit_error", message: "Number of requests has exceeded your rate limit" } }
    : { error: { code: 429, message: "Resource has been exhausted (e.g. check quota).", status: "RESOURCE_EXHAUSTED" } }
})

const promptOf = (provider: ProviderName, body: any): string => {
  if (provider === "openai") return (body.messages ?? []).map((m: any) => String(m.content)).join("\n")
  if (provider === "anthropic") {
    return `${body.system ?? ""}\n${(body.messages ?? []).map((m: any) => String(m.content)).join("\n")}`
  }
  const parts = [...(body.systemInstruction?.parts ?? []), ...(body.contents ?? []).flatMap((c: any) => c.parts)]
  return parts.map((p: any) => p.text ?? "").join("\n")
}

/** A stub of `provider` on a loopback port; closed with the scope. `baseUrl` is its API root. */
export const providerStub = (provider: ProviderName) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const requests: Array<StubRequest> = []
      const queue: Array<Reply> = []
      const state = {
        review: { summary: "Looks fine.", overallSentiment: "positive", suggestions: [] } as ReviewAnswer
      }
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", async () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let body: any = undefined
          try {
            body = JSON.parse(text)
          } catch {
            body = text
          }
          requests.push({ path: req.url ?? "", headers: req.headers, body, prompt: promptOf(provider, body) })
          const reply = queue.shift() ?? success(provider, state.review, provider !== "openai")
          if (reply.hold !== undefined) await reply.hold
          res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
          res.end(JSON.stringify(reply.body))
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const port = (server.address() as AddressInfo).port
      const root = provider === "openai" ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`
      return {
        server,
        baseUrl: root,
        requests,
        /** Answers that come before the default review, in order. */
        queue,
        /** The review every other request gets. */
        setReview: (review: ReviewAnswer) => {
          state.review = review
        }
      }
    }),
    (stub) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          stub.server.closeAllConnections()
          stub.server.close(() => resolve())
        })
      )
  )

export type ProviderStub = Effect.Success<ReturnType<typeof providerStub>>

/** A loopback webhook receiver that records every delivery's event header and body. */
export const webhookReceiver = Effect.acquireRelease(
  Effect.promise(async () => {
    const received: Array<{ event: string; body: string }> = []
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        received.push({ event: String(req.headers["x-service-event"]), body: Buffer.concat(chunks).toString("utf8") })
        res.writeHead(200).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received }
  }),
  (receiver) =>
    Effect.promise(() =>
      new Promise<void>((resolve) => {
        receiver.server.closeAllConnections()
        receiver.server.close(() => resolve())
      })
    )
)
