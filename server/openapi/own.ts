import { z } from 'zod';
import { routeDocs } from './registry.js';

/** Routes declared outside a domain: health (server/app.ts) and this document (./routes.ts). */
export const ownDocs = routeDocs({
  'GET /healthz': {
    summary: 'Health of head office',
    description: 'For load balancers and `footfall status`; no token.',
    security: [],
    responses: {
      200: { description: 'Database and broker up', json: z.object({ status: z.literal('ok'), database: z.literal('ok'), broker: z.literal('ok') }) },
      503: {
        description: 'Something is down',
        json: z.object({ status: z.literal('unavailable'), database: z.enum(['ok', 'down']), broker: z.enum(['ok', 'down']) }),
      },
    },
  },
  'GET /api/openapi.json': {
    summary: 'This OpenAPI document',
    description: 'Generated from the routes head office runs. Browsable in the console at /console/api-reference.html.',
    security: [],
    responses: { 200: { description: 'The OpenAPI 3.1 document', json: z.object({ openapi: z.string(), info: z.object({ title: z.string(), version: z.string() }).loose(), paths: z.record(z.string(), z.unknown()) }).loose() } },
  },
});
