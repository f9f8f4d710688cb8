import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Incidents with their timelines and affected monitors, and status page components (GUIDE §6). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE incidents (
      id text PRIMARY KEY,
      -- Insertion order: ties on created_at (same millisecond) still list newest first.
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      title text NOT NULL,
      description text,
      -- investigating | identified | monitoring | resolved
      status text NOT NULL,
      -- major | minor | maintenance
      severity text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      resolved_at timestamptz
    )`
  yield* sql`CREATE INDEX incidents_org_idx ON incidents (org_id, created_at DESC, seq DESC)`
  yield* sql`CREATE INDEX incidents_unresolved_idx ON incidents (org_id) WHERE status <> 'resolved'`
  yield* sql`
    CREATE TABLE incident_updates (
      id text PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      incident_id text NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
      status text NOT NULL,
      message text NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX incident_updates_incident_idx ON incident_updates (incident_id, seq)`
  yield* sql`
    CREATE TABLE incident_monitors (
      incident_id text NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
      monitor_id text NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
      position integer NOT NULL,
      PRIMARY KEY (incident_id, monitor_id)
    )`
  yield* sql`CREATE INDEX incident_monitors_monitor_idx ON incident_monitors (monitor_id)`
  yield* sql`
    CREATE TABLE components (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      position integer NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX components_org_idx ON components (org_id, position)`
  yield* sql`
    CREATE TABLE component_monitors (
      component_id text NOT NULL REFERENCES components (id) ON DELETE CASCADE,
      monitor_id text NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
      position integer NOT NULL,
      PRIMARY KEY (component_id, monitor_id)
    )`
  yield* sql`CREATE INDEX component_monitors_monitor_idx ON component_monitors (monitor_id)`
})
