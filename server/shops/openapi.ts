import { z } from 'zod';
import { routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

/** Response shapes of ./presenter.ts. */
export const Shop = z
  .object({
    site_id: Uuid,
    slug: z.string(),
    name: z.string(),
    timezone: z.string().meta({ description: 'IANA time zone' }),
    online: z.boolean(),
    last_heartbeat_at: Timestamp.nullable(),
    last_event_at: Timestamp.nullable(),
    recognition_model: z.string(),
    agent_version: z.string(),
    cameras_up: z.number().int(),
    cameras_total: z.number().int(),
    fraction_below_gate: z.number().nullable().meta({ description: 'Share of faces too poor to use; null until a face is seen' }),
    worst_camera_id: z.string().nullable().meta({ description: 'Additive: camera_id of the camera fraction_below_gate is about (the worst one); null when not reported' }),
    queued: z.number().int(),
    dropped: z.number().int(),
    broker_username: z.string(),
    enrolled_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'Shop' });

const Period = z.object({ open: z.string().meta({ description: 'HH:MM local' }), close: z.string().meta({ description: 'HH:MM local, after open; 24:00 is midnight' }) });
export const OpeningHours = z
  .object({ mon: z.array(Period), tue: z.array(Period), wed: z.array(Period), thu: z.array(Period), fri: z.array(Period), sat: z.array(Period), sun: z.array(Period) })
  .meta({ id: 'OpeningHours', description: 'Open periods per weekday (local wall time in the shop zone); an empty list: closed that day' });

const atTheDoor = 'docs/body-counting.md. null when no camera of the shop has a counting line';

/** A Shop with its day at the door (GET /api/sites rows, GET /api/sites/{site}). */
export const Site = Shop.extend({
  occupancy: z
    .number()
    .int()
    .min(0)
    .nullable()
    .meta({ description: `People in the shop now: entries minus exits since the shop's local midnight, in time order, never below zero. ${atTheDoor}` }),
  entries_today: z.number().int().min(0).nullable().meta({ description: `Entries since the shop's local midnight. ${atTheDoor}` }),
  exits_today: z.number().int().min(0).nullable().meta({ description: `Exits since the shop's local midnight. ${atTheDoor}` }),
  door_counting_problem: z
    .string()
    .nullable()
    .meta({
      description:
        "Why entries and exits are not being counted although a camera has a counting line: the shop PC's last heartbeat's words (e.g. the person model is missing), else the door cameras that counted nobody in the last hour while the shop's other cameras saw people (named; see Camera.counting); null: counting runs, or no line. docs/body-counting.md, docs/shops-and-cameras.md",
    }),
  opening_hours: OpeningHours.nullable().meta({ description: "Additive: opening hours per weekday in the shop's zone; null: not set (docs/operations.md, \"Opening hours\")" }),
  region: z.string().nullable().meta({ description: 'Additive: the region (group of shops); null: none' }),
  occupancy_limit: z.number().int().nullable().meta({ description: 'Additive: people allowed in at once (the occupancy alert); null: no limit' }),
}).meta({ id: 'Site' });

const ShopCheck = z
  .object({
    site_id: Uuid,
    site: z.string(),
    ok: z.boolean(),
    steps: z.array(z.object({ name: z.string(), status: z.string(), detail: z.string(), advice: z.string().optional() })),
  })
  .meta({ id: 'ShopCheck' });

const site = { site: 'Shop slug or id' };
const noKey = '`no_encryption_key`: the server key is missing; or the broker refuses new logins';

export const shopsDocs = routeDocs({
  'GET /api/sites': { summary: 'Shops of the company', params: { region: 'Additive: only the shops of this region (empty: the shops without one)' }, responses: { 200: { description: 'Every shop with its health and its day at the door', json: z.array(Site) } } },
  'GET /api/sites/{site}': { summary: 'One shop', params: site, responses: { 200: { description: 'The shop with its health and its day at the door', json: Site } } },
  'POST /api/sites': {
    summary: 'Open a shop',
    responses: {
      201: { description: 'Opened', json: z.object({ site_id: Uuid, slug: z.string(), name: z.string(), timezone: z.string(), broker_username: z.string() }) },
      409: 'The slug is taken',
      503: noKey,
    },
  },
  'PATCH /api/sites/{site}': {
    summary: "Change a shop's settings",
    description: 'Additive route. Opening hours, region and occupancy limit (and the display name); an omitted field is left alone, null clears it. Manager or owner.',
    params: site,
    responses: { 200: { description: 'The shop as GET /api/sites/{site} shows it', json: Site } },
  },
  'DELETE /api/sites/{site}': {
    summary: 'Remove an empty shop',
    params: site,
    responses: { 200: { description: 'Removed; its broker login is gone', json: z.object({ deleted: z.string(), site_id: Uuid }) }, 409: '`site_not_empty`: it has visits, crossings (entries and exits) or cameras' },
  },
  'GET /api/sites/{site}/check': {
    summary: 'Check a shop step by step',
    description: 'Checking stops at the first step that fails; later steps are `unknown`.',
    params: site,
    responses: { 200: { description: 'The steps', json: ShopCheck } },
  },
  'POST /api/sites/{site}/enrolment-code': {
    summary: 'An installation code for the shop PC',
    params: site,
    responses: {
      201: { description: 'The single-use code (shown once)', json: z.object({ code: z.string(), site_id: Uuid, site_name: z.string(), label: z.string(), expires_at: Timestamp }) },
      503: noKey,
    },
  },
});
