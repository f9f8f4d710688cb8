import { Schema } from "effect"

/** A CODEOWNERS line that cannot be used: its number (1-based), why, and its text. */
export const CodeOwnersError = Schema.Struct({ line: Schema.Int, message: Schema.String, text: Schema.String })

export const CodeOwnersErrors = Schema.Struct({ errors: Schema.Array(CodeOwnersError) }).annotate({
  examples: [{ errors: [{ line: 3, message: "Negation patterns are not supported", text: "!docs/ @alice" }] }]
})
export type CodeOwnersErrors = typeof CodeOwnersErrors.Type

export const CodeOwnersErrorsQuery = {
  ref: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(250)))
}
