import { NodeClusterSocket } from "@effect/platform-node"
import { NodeCrypto } from "@effect/platform-node"
import { Layer, Option } from "effect"
import { RunnerAddress, SingleRunner } from "effect/cluster"
import type { AppConfigShape } from "../services/platform/AppConfig.ts"

/**
 * Failure detection tuned for a small cluster: a runner that stops refreshing its shard
 * locks loses them after `shardLockExpiration`, and the survivors take them over.
 */
export const shardsPerGroup = 300

const sharding = {
  shardsPerGroup,
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
 * Embedded mode: one runner, SQL storage. With `RUNNER_ADDRESS` set: socket runners
 * sharing Postgres for shard locks and durable messages (connect directly, not through
 * a transaction pooler: shard locks are session advisory locks).
 */
export const ClusterLive = (config: AppConfigShape) =>
  Option.match(config.runnerAddress, {
    onNone: () =>
      SingleRunner.layer({ runnerStorage: "sql", shardingConfig: sharding }).pipe(
        Layer.provide(NodeCrypto.layerDigest)
      ),
    onSome: (address) =>
      NodeClusterSocket.layer({
        storage: "sql",
        shardingConfig: {
          ...sharding,
          runnerAddress: Option.some(RunnerAddress.make(address.host, address.port)),
          runnerListenAddress: Option.map(
            config.runnerListenAddress,
            (listen) => RunnerAddress.make(listen.host, listen.port)
          )
        }
      })
  })
