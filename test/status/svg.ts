import { XMLParser, XMLValidator } from "fast-xml-parser"

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", textNodeName: "#text" })

/** Every element named `name` anywhere below `node`, in document order. */
export const findAll = (node: unknown, name: string): Array<any> => {
  const found: Array<any> = []
  const walk = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(walk)
    if (typeof value !== "object" || value === null) return
    for (const [key, child] of Object.entries(value)) {
      if (key === name) { for (const element of Array.isArray(child) ? child : [child]) found.push(element) }
      walk(child)
    }
  }
  walk(node)
  return found
}

/** The text of an element as the parser returns it (a bare string, or `#text` beside attributes). */
export const textOf = (element: any): string =>
  typeof element === "object" && element !== null ? String(element["#text"] ?? "") : String(element)

/** Parses a document that must be well-formed XML (throws with the validator's reason otherwise). */
export const parseXml = (text: string): any => {
  const valid = XMLValidator.validate(text)
  if (valid !== true) throw new Error(`not well-formed XML: ${JSON.stringify(valid.err)}`)
  return parser.parse(text)
}

/** What a badge shows: its texts (label and message), the fills of its shapes and its width. */
export const readBadge = (svg: string) => {
  const doc = parseXml(svg)
  return {
    root: doc.svg,
    texts: findAll(doc, "text").map(textOf),
    fills: findAll(doc, "rect").map((rect) => rect["@_fill"]).filter((fill) => fill !== undefined),
    width: Number(doc.svg["@_width"])
  }
}
