import { boolean, doublePrecision, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import type { OpeningHours } from '../../../shops/hours.js';
import { timestamptz } from '../columns.js';
import { companies } from './clients.js';

/** server/shops/schema.ts */
export const shops = pgTable(
  'shops',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    timezone: text('timezone').notNull(),
    createdAt: timestamptz('created_at').notNull(),
    brokerUsername: text('broker_username').notNull().unique(),
    brokerSecret: text('broker_secret'),
    agentTokenHash: text('agent_token_hash').unique(),
    enrolledAt: timestamptz('enrolled_at'),
    agentHostname: text('agent_hostname'),
    lastHeartbeatAt: timestamptz('last_heartbeat_at'),
    offlineSince: timestamptz('offline_since'),
    lastEventAt: timestamptz('last_event_at'),
    agentVersion: text('agent_version').notNull().default(''),
    recognitionModel: text('recognition_model').notNull().default(''),
    recognitionRunning: boolean('recognition_running'),
    recognitionProblem: text('recognition_problem'),
    doorCountingProblem: text('door_counting_problem'),
    camerasUp: integer('cameras_up').notNull().default(0),
    camerasTotal: integer('cameras_total').notNull().default(0),
    queued: integer('queued').notNull().default(0),
    dropped: integer('dropped').notNull().default(0),
    fractionBelowGate: doublePrecision('fraction_below_gate'),
    worstCameraId: text('worst_camera_id'),
    openingHours: jsonb('opening_hours').$type<OpeningHours>(),
    region: text('region'),
    occupancyLimit: integer('occupancy_limit'),
  },
  (t) => [uniqueIndex('shops_company_slug_uq').on(t.companyId, t.slug), index('shops_company_region_idx').on(t.companyId, t.region)],
);

export const enrolmentCodes = pgTable(
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
    createdAt: timestamptz('created_at').notNull(),
    expiresAt: timestamptz('expires_at').notNull(),
    usedAt: timestamptz('used_at'),
  },
  (t) => [index('enrolment_codes_shop_idx').on(t.shopId)],
);
