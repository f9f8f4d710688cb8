import { Layer } from "effect"
import { Compaction } from "./Compaction.ts"
import { GitWork } from "./GitWork.ts"
import { Lfs } from "./Lfs.ts"
import { LfsLocks } from "./LfsLocks.ts"
import { PackStore } from "./PackStore.ts"
import { ReceivePack } from "./ReceivePack.ts"
import { RefUpdates } from "./RefUpdates.ts"
import { RepoCache } from "./RepoCache.ts"
import { RepoReader } from "./RepoReader.ts"
import { Repositories } from "./Repositories.ts"
import { UploadPack } from "./UploadPack.ts"

/** Every git hosting service, wired (needs SQL, BlobStore, AppConfig, ApiKeys' dependencies). */
export const GitLive = Layer.mergeAll(
  ReceivePack.layer,
  UploadPack.layer,
  Compaction.layer,
  RepoReader.layer,
  Lfs.layer,
  LfsLocks.layer
).pipe(
  Layer.provideMerge(RefUpdates.layer),
  Layer.provideMerge(PackStore.layer),
  Layer.provideMerge(RepoCache.layer),
  Layer.provideMerge(Repositories.layer),
  Layer.provideMerge(GitWork.layer)
)
