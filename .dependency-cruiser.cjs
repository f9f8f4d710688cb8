/**
 * The layering (README, "Architecture"), checked by `npm run check`:
 *   schemas/ → effect only · services/ never import src/ · src/http never imports src/entities ·
 *   a feature reaches another feature's tables (its `*Rows.ts`) only through its services · no circles.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import circle: split the shared part out (one concept per file).",
      from: {},
      to: { circular: true }
    },
    {
      name: "schemas-import-only-effect",
      severity: "error",
      comment: "schemas/ is the wire contract: it imports only effect and other schemas.",
      from: { path: "^schemas/" },
      to: { pathNot: ["^schemas/", "(^|/)node_modules/effect/"] }
    },
    {
      name: "services-never-import-src",
      severity: "error",
      comment: "services/ hold the logic; src/ (http, entities) depends on them, never the other way.",
      from: { path: "^services/" },
      to: { path: "^src/" }
    },
    {
      name: "http-never-imports-entities",
      severity: "error",
      comment: "src/http reaches cluster entities through services (their protocols live beside the services).",
      from: { path: "^src/http/" },
      to: { path: "^src/entities/" }
    },
    {
      name: "tables-through-their-feature",
      severity: "error",
      comment: "Another feature's table statements (*Rows.ts) are reached through that feature's services.",
      from: { path: "^(?:services|src/entities|src/http)/([^/]+)/" },
      to: { path: "^services/[^/]+/[^/]*Rows\\.ts$", pathNot: ["^services/$1/", "^services/platform/Rows\\.ts$"] }
    },
    {
      name: "layers-are-roots",
      severity: "error",
      comment: "layers/ compose the app; only entry points (src/main.ts, src/cli.ts), tests and benches import them.",
      from: { path: "^(?:schemas|services|src/http|src/entities)/" },
      to: { path: "^layers/" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"]
    },
    exclude: { path: "^node_modules" }
  }
}
