import { z } from 'zod';
import { ImageObject, routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

export const Attributes = z
  .object({ gender: z.string().optional(), age: z.number().optional(), emotion: z.string().optional() })
  .meta({ id: 'Attributes', description: 'What the shop PC estimated; each may be absent' });

/** The spec's Arrival (./presenter.ts presentArrival). */
export const Arrival = z
  .object({
    visit_id: Uuid.meta({ description: 'De-duplicate on this: delivery is at least once' }),
    occurred_at: Timestamp,
    site_id: Uuid,
    site: z.string(),
    site_slug: z.string(),
    camera_id: z.string(),
    visitor_id: Uuid.optional().meta({ description: 'Identified customers only' }),
    visitor_ref: z.string().optional().meta({ description: '`V-<number>`; identified customers only' }),
    label: z.string().meta({ description: 'Name, or `Visitor <number>`; empty when nobody was identified' }),
    is_new_visitor: z.boolean(),
    returning: z.boolean().meta({ description: 'Additive: the customer was seen on a visit before this visit\'s local day in the shop\'s zone (the reports\' meaning of returning); false when unidentified' }),
    last_seen_at: Timestamp.meta({ description: 'Additive: the last sighting of this stay (a visit is a stay: sightings within FOOTFALL_VISIT_GAP_S extend it)' }),
    dwell_s: z.number().int().min(0).meta({ description: 'Additive: seconds from occurred_at to last_seen_at' }),
    similarity: z.number().meta({ description: 'Cosine similarity to the matched template; 1 for a new customer, 0 when unidentified' }),
    quality: z.number(),
    attributes: Attributes,
    image: ImageObject,
  })
  .meta({ id: 'Arrival' });

const siteParams = { site: 'Only this shop (slug or id); unknown: 400', site_id: 'The same filter as `site`' };

const cursorHeader = {
  'Last-Event-ID': 'Resume after this event id (the opaque cursor of the last event received); wins over the `cursor` query parameter',
};

export const visitsDocs = routeDocs({
  'GET /api/visits': {
    summary: 'Poll arrivals after a cursor',
    description:
      'Rows are ascending; at most `limit` (default FOOTFALL_VISITS_LIMIT_DEFAULT, at most FOOTFALL_VISITS_LIMIT_MAX). Without a cursor: the latest `limit` rows. Send the answer’s `cursor` back on the next poll; an empty poll returns your own cursor. A cursor that fails to parse (400) means its format changed: drop it and poll without one. Unknown `site`: 400.',
    params: { limit: 'At most this many rows (1 to FOOTFALL_VISITS_LIMIT_MAX)', cursor: 'The `cursor` of the previous answer (opaque)', ...siteParams },
    responses: {
      200: {
        description: 'Arrivals after the cursor',
        json: z.object({ arrivals: z.array(Arrival), cursor: z.string().meta({ description: 'Opaque: send it back' }), polled_at: Timestamp }),
      },
    },
  },
  'GET /api/visits/stream': {
    summary: 'Arrivals as server-sent events',
    description:
      'Each `arrival` event carries an Arrival; its `id:` is the opaque cursor, so a reconnecting client resumes with `Last-Event-ID` (or `?cursor=`) and misses nothing. Without either: arrivals from now on. The stream starts with `retry: 2000`, and sends `: keep-alive` comments every FOOTFALL_SSE_KEEPALIVE_S seconds. A client too slow to read is disconnected; it resumes from its last id. A browser EventSource cannot send the Authorization header: use an HTTP client.',
    request: { headers: cursorHeader },
    params: { cursor: 'Resume after this cursor when Last-Event-ID cannot be sent', ...siteParams },
    responses: {
      200: {
        description: 'An event stream',
        events: { arrival: { description: 'One arrival; `id:` is its cursor', data: Arrival } },
      },
    },
  },
});
