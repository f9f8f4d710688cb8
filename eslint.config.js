import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

/**
 * `*Rows.ts` means one thing: a table's statements and its row Schemas, together. Services,
 * entities and routes call those functions and write no SQL of their own (a `sql` tagged
 * template, `sql(…)` identifier, or `sql.literal`/`in`/`and`/`or`/`csv`/`unsafe` fragment);
 * `sql.withTransaction` stays with the service that owns the transaction. Only the platform
 * helpers (services/platform: Database, Rows) and migrations/ are exempt.
 */
const sqlOutsideRows =
  "SQL belongs in the table's *Rows.ts (its statements beside its row Schemas): call a Rows function here."
const sqlOutsideRowsRule = [
  "error",
  { selector: "TaggedTemplateExpression[tag.type='Identifier'][tag.name='sql']", message: sqlOutsideRows },
  { selector: "CallExpression[callee.type='Identifier'][callee.name='sql']", message: sqlOutsideRows },
  {
    selector: "CallExpression[callee.object.name='sql'][callee.property.name=/^(literal|unsafe|in|and|or|csv)$/]",
    message: sqlOutsideRows
  }
]

export default tseslint.config(
  { ignores: ["node_modules/**", ".data/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-namespace": "off"
    }
  },
  {
    files: ["services/**/*.ts", "src/**/*.ts"],
    ignores: ["**/*Rows.ts", "services/platform/**"],
    rules: { "no-restricted-syntax": sqlOutsideRowsRule }
  }
)
