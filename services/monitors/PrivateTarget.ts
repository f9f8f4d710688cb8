import type { CheckType, FieldIssue } from "../../schemas/monitors/Monitors.ts"
import { classifyAddress } from "../outbound/OutboundGuard.ts"

/**
 * A monitor whose URL names a private, loopback or reserved address literally (or
 * `localhost`) could only ever fail while outbound requests to such addresses are refused:
 * say so when it is created or changed, with the way to allow it. Names that resolve to
 * such addresses are still refused by the outbound guard at check time. DNS checks make no
 * connection, so they are exempt.
 */
export const privateTargetIssue = (
  checkType: CheckType,
  url: string,
  allowPrivate: boolean
): FieldIssue | undefined => {
  if (allowPrivate || checkType === "dns") return undefined
  let host: string
  try {
    host = new URL(url).hostname
  } catch {
    return undefined // the URL rules report it
  }
  const literal = host.startsWith("[") ? host.slice(1, -1) : host
  const category = literal === "localhost" || literal.endsWith(".localhost")
    ? "loopback"
    : /^[\d.]+$|:/.test(literal)
    ? classifyAddress(literal)
    : undefined
  if (category === undefined) return undefined
  return {
    field: "url",
    message: `points at a ${category} address (${literal}), which monitors may not reach; ` +
      "an operator can allow it by starting Canopy with OUTBOUND_ALLOW_PRIVATE=true"
  }
}
