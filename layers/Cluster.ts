import { NodeClusterSocket } from "@effect/platform-node"
import { NodeCrypto } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer, Option } from "effect"
import { RunnerAddress, SingleRunner } from "effect/cluster"
import { CI_SHARD_GROUP } from "../services/ci/CiQueueProtocol.ts"
import { ciWorkerRole } from "../services/ci/WorkerRole.ts"
import type { AppConfigShape } from "../services/platform/AppConfig.ts"
import { Database } from "../services/platform/Database.ts"

/**
 * Shards per group (effect/cluster has one count for every group). 100, not effect's 300: a
 * runner releases its shards one by one on the single lock connection when it stops (two
 * statements each), and with two groups 600 shards made every stop under load a stream of
 * "Could not release shards" timeouts. 100 still spreads organizations and monitors evenly over
 * the handful of runners a deployment has (monitor rows record their shard with the count, and
 * are reassigned when it changes).
 */
export const shardsPerGroup = 100

/**
 * Every runner knows every group (the list must be the same on all of them: shard locks are
 * numbered by its sorted order); `ci` holds the CI queues (`services/ci/CiQueueProtocol.ts`).
 */
export const shardGroups = ["default", CI_SHARD_GROUP] as const

/**
 * Failure detection tuned for a small cluster: a runner that stops refreshing its shard
 * locks loses them after `shardLockExpiration`, and the survivors take them over.
 */
const sharding = {
  shardsPerGroup,
  availableShardGroups: shardGroups,
  shardLockRefreshInterval: "2 seconds",
  shardLockExpiration: "8 seconds",
  runnerHealthCheckInterval: "2 seconds",
  entityMessagePollInterval: "1 second",
  // Monitor entities (src/entities/monitors/MonitorEntity.ts) are resident only around their checks, but
  // after a restart every overdue monitor is checked at once: the default cap of 10,000
  // resident entities would hold back (and delay) the rest of that burst.
  maxResidentEntities: "unbounded"
} as const

/**
 * The cluster's own Postgres connections (`CLUSTER_DB_CONNECTIONS`, default 6; 0 shares the request pool), apart from
 * the request pool: shard-lock refreshes, runner health and entity messages never queue
 * behind tenant work holding every pooled connection (an import's hundreds of statements,
 * an ingest burst). Seen before: "Shard lock storage is unhealthy" and shards released and
 * retaken while one push ran, with every monitor's check late.
 */
/** How the cluster's connections name themselves in `pg_stat_activity`. */
export const CLUSTER_APPLICATION_NAME = "canopy-cluster"

const ControlPlaneSql = Layer.unwrap(Effect.gen(function*() {
  const database = yield* Database
  const connections = yield* Config.Number("CLUSTER_DB_CONNECTIONS").pipe(Config.withDefault(6))
  // 0: the request pool, as before (for comparison in benchmarks).
  if (connections <= 0) return Layer.empty
  return PgClient.layer({
    url: database.url,
    maxConnections: Math.max(2, connections),
    applicationName: CLUSTER_APPLICATION_NAME
  })
}))

/**
 * Embedded mode: one runner, SQL storage. With `RUNNER_ADDRESS` set: socket runners
 * sharing Postgres for shard locks and durable messages (connect directly, not through
 * a transaction pooler: shard locks are session advisory locks). Either way on the
 * cluster's own connections (`ControlPlaneSql`).
 */
export const ClusterLive = (config: AppConfigShape) =>
  Layer.unwrap(Effect.map(Effect.orDie(ciWorkerRole), (role) =>
    // `ci` shards only on runners that execute CI jobs (`CI_WORKER`, default true, and the sandbox's tools).
    runners(config, role.executes ? shardGroups : ["default"]))).pipe(Layer.provide(ControlPlaneSql))

const runners = (config: AppConfigShape, assignedShardGroups: ReadonlyArray<string>) =>
  Option.match(config.runnerAddress, {
    onNone: () =>
      SingleRunner.layer({ runnerStorage: "sql", shardingConfig: { ...sharding, assignedShardGroups } }).pipe(
        Layer.provide(NodeCrypto.layerDigest)
      ),
    onSome: (address) =>
      NodeClusterSocket.layer({
        storage: "sql",
        shardingConfig: {
          ...sharding,
          assignedShardGroups,
          runnerAddress: Option.some(RunnerAddress.make(address.host, address.port)),
          runnerListenAddress: Option.map(
            config.runnerListenAddress,
            (listen) => RunnerAddress.make(listen.host, listen.port)
          )
        }
      })
  })
