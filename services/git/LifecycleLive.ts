import { Layer } from "effect"
import { RepositoryLifecycle } from "./RepositoryLifecycle.ts"
import { StorageReport } from "./StorageReport.ts"
import { Transfers } from "./Transfers.ts"

/** Repository lifecycle (GUIDE §16), wired: needs the git, pull request and webhook services. */
export const LifecycleLive = Layer.mergeAll(RepositoryLifecycle.layer, Transfers.layer, StorageReport.layer)
