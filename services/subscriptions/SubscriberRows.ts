import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `subscribers` table: its rows and every statement on it.
 */

/** The organization of a subscriber a link confirmed or removed. */
const SubscriberOrg = Schema.Struct({ org_id: Schema.String })

/** The subscriber a subscribe request recorded or found, and whether it is confirmed already. */
const Subscribed = Schema.Struct({ id: Schema.String, confirmed: Schema.Boolean })

/** A confirmed subscriber; `components` null means every component. */
const Subscriber = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  components: Schema.NullOr(Schema.Array(Schema.String))
})

/**
 * Records an unconfirmed subscriber, or gives a pending one the new token and components
 * (a confirmed one keeps its own); returns the row and whether it is confirmed.
 */
export const upsertSubscriber = (
  sql: SqlClient.SqlClient,
  subscriber: {
    readonly orgId: string
    readonly email: string
    readonly components: ReadonlyArray<string> | null
    readonly tokenHash: string
  }
) =>
  sql`
    INSERT INTO subscribers (id, org_id, email, components, confirm_token_hash)
    VALUES (${makeId("sub")}, ${subscriber.orgId}, ${subscriber.email}, ${
    subscriber.components === null ? null : JSON.stringify(subscriber.components)
  }::jsonb,
      ${subscriber.tokenHash})
    ON CONFLICT (org_id, email) DO UPDATE SET
      confirm_token_hash = CASE WHEN subscribers.confirmed_at IS NULL
        THEN EXCLUDED.confirm_token_hash ELSE subscribers.confirm_token_hash END,
      components = CASE WHEN subscribers.confirmed_at IS NULL
        THEN EXCLUDED.components ELSE subscribers.components END
    RETURNING id, confirmed_at IS NOT NULL AS confirmed`.pipe(decodeRows(Subscribed))

/** Confirms the subscriber holding the token (which then dies); returns its organization. */
export const confirmSubscriber = (sql: SqlClient.SqlClient, tokenHash: string) =>
  sql`
    UPDATE subscribers SET confirmed_at = now(), confirm_token_hash = NULL
    WHERE confirm_token_hash = ${tokenHash}
    RETURNING org_id`.pipe(decodeRows(SubscriberOrg))

/** Deletes the subscriber; returns its organization (nothing where it was gone already). */
export const deleteSubscriber = (sql: SqlClient.SqlClient, id: string) =>
  sql`
    DELETE FROM subscribers WHERE id = ${id}
    RETURNING org_id`.pipe(decodeRows(SubscriberOrg))

/** The organization's subscribers confirmed by `at`. */
export const subscribersConfirmedBy = (sql: SqlClient.SqlClient, orgId: string, at: Date) =>
  sql`
    SELECT id, email, components FROM subscribers
    WHERE org_id = ${orgId} AND confirmed_at IS NOT NULL AND confirmed_at <= ${at}`.pipe(decodeRows(Subscriber))
