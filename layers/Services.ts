import { Effect, Layer, Option, Redacted } from "effect"
import * as Path from "node:path"
import { Mailer } from "../services/mail/Mailer.ts"
import type { AppConfigShape } from "../services/platform/AppConfig.ts"
import { Crypto, loadOrCreateMasterKey } from "../services/platform/Crypto.ts"
import { layerFolder } from "../services/storage/BlobStoreFolder.ts"
import { layerS3 } from "../services/storage/BlobStoreS3.ts"

/** Object storage: S3 when configured, else `DATA_DIR/blobs`. */
export const BlobStoreLive = (config: AppConfigShape) =>
  Option.match(config.s3, {
    onSome: (s3) => layerS3(s3),
    onNone: () => layerFolder(Path.resolve(config.dataDir, "blobs"))
  })

/** Outgoing mail: SMTP when configured, else `.eml` files in `DATA_DIR/outbox`. */
export const MailerLive = (config: AppConfigShape) =>
  Option.match(config.smtpUrl, {
    onSome: (url) => Mailer.layerSmtp({ url: Redacted.value(url), from: config.mailFrom }),
    onNone: () => Mailer.layerOutbox({ dir: Path.resolve(config.dataDir, "outbox"), from: config.mailFrom })
  })

/** Encryption keys derive from `MASTER_KEY`, else from `DATA_DIR/master.key` (created 0600). */
export const CryptoLive = (config: AppConfigShape) =>
  Layer.unwrap(
    Effect.map(
      loadOrCreateMasterKey(config.dataDir, Option.getOrUndefined(Option.map(config.masterKey, Redacted.value))),
      (key) => Crypto.layer(key)
    )
  )
