import type { SqlClient } from "effect/sql"
import { consumerLag } from "./EventConsumerRows.ts"

/** Every outbox consumer's lag, for the `canopy_outbox_lag_*` gauges (bounded; see `consumerLag`). */
export const outboxConsumerLag = (sql: SqlClient.SqlClient, cap: number) => consumerLag(sql, cap)
