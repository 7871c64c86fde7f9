import { index, integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';
import type { OpeningHours } from './hours.js';

/**
 * A shop (site). The slug is immutable and unique within its company; with the company slug it names the shop's
 * broker login (`<company>.<shop>`) and topic prefix (`ff/<company>/<shop>/`). The columns after `createdAt` are what
 * the shop PC last reported (heartbeats) and are overwritten by each one.
 */
export const shops = sqliteTable(
  'shops',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    timezone: text('timezone').notNull(),
    createdAt: text('created_at').notNull(),
    /** `<company-slug>.<shop-slug>`. */
    brokerUsername: text('broker_username').notNull().unique(),
    /** The broker secret, AES-256-GCM with the server key. null: the login was removed (company being deleted). */
    brokerSecret: text('broker_secret'),
    /** SHA-256 of the shop PC's token (`ffs_...`); null until enrolled. Re-enrolment replaces it. */
    agentTokenHash: text('agent_token_hash').unique(),
    enrolledAt: text('enrolled_at'),
    agentHostname: text('agent_hostname'),
    lastHeartbeatAt: text('last_heartbeat_at'),
    /**
     * When the shop PC said goodbye (a clean stop) or its MQTT last will arrived (an unclean loss): offline from then
     * until its next heartbeat, which clears it. null: no goodbye since the last heartbeat.
     */
    offlineSince: text('offline_since'),
    /** Set by visit ingest (the visits issue): when the last visit from this shop arrived. */
    lastEventAt: text('last_event_at'),
    agentVersion: text('agent_version').notNull().default(''),
    recognitionModel: text('recognition_model').notNull().default(''),
    recognitionRunning: integer('recognition_running', { mode: 'boolean' }),
    recognitionProblem: text('recognition_problem'),
    /** The shop PC's last word on body counting not running (heartbeat `door_counting_problem`); null: running or not used. */
    doorCountingProblem: text('door_counting_problem'),
    camerasUp: integer('cameras_up').notNull().default(0),
    camerasTotal: integer('cameras_total').notNull().default(0),
    queued: integer('queued').notNull().default(0),
    dropped: integer('dropped').notNull().default(0),
    fractionBelowGate: real('fraction_below_gate'),
    worstCameraId: text('worst_camera_id'),
    /** Opening hours per weekday in the shop's zone (docs/operations.md, "Opening hours"); null: not set. */
    openingHours: text('opening_hours', { mode: 'json' }).$type<OpeningHours>(),
    /** The region (group of shops) it belongs to; null: none. */
    region: text('region'),
    /** People allowed in the shop at once (occupancy alert); null: no limit. */
    occupancyLimit: integer('occupancy_limit'),
  },
  (t) => [uniqueIndex('shops_company_slug_uq').on(t.companyId, t.slug), index('shops_company_region_idx').on(t.companyId, t.region)],
);

/** Installation codes. Only an HMAC of the code is kept; single use. */
export const enrolmentCodes = sqliteTable(
  'enrolment_codes',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    codeHash: text('code_hash').notNull().unique(),
    label: text('label').notNull().default(''),
    requestedBy: text('requested_by'),
    requestedByEmail: text('requested_by_email'),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
    usedAt: text('used_at'),
  },
  (t) => [index('enrolment_codes_shop_idx').on(t.shopId)],
);
