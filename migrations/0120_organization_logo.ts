import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The organization's logo (issue 31): the URL an admin set, and the copy Canopy fetched from
 * it into the BlobStore (key, media type, ETag) or why that failed, so the public status page
 * serves the image itself and makes no third-party request.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE organizations
    ADD COLUMN logo_url text,
    ADD COLUMN logo_blob text,
    ADD COLUMN logo_content_type text,
    ADD COLUMN logo_etag text,
    ADD COLUMN logo_error text`
})
