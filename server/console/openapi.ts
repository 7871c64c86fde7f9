import { z } from 'zod';
import { routeDocs } from '../openapi/registry.js';
import { ROOT_POINTER } from './serve.js';

/**
 * `GET /` (./serve.ts): the console's page to a browser, a one-line JSON pointer to anyone else. Only this route of
 * the console is in the OpenAPI document; its static files (/console/*) are the page's own, not an API.
 */
const RootPointer = z.object({
  service: z.literal(ROOT_POINTER.service),
  console: z.string().meta({ description: 'Where the console is' }),
  api_reference: z.string().meta({ description: 'This document' }),
  health: z.string().meta({ description: 'The health check' }),
});

export const consoleDocs = routeDocs({
  'GET /': {
    summary: 'What is here: the console to a browser, a JSON pointer to anything else',
    description:
      'An `Accept` naming `text/html` (a browser) gets the console page; any other caller (curl, an app) gets `{ service, console, api_reference, health }`. ' +
      'The answer varies on Accept. Other methods are the JSON 404 of an unknown path.',
    tags: ['Console'],
    security: [],
    responses: {
      200: { description: 'The pointer (JSON), or the console page (HTML) to a browser', json: RootPointer, media: 'text/html' },
      304: 'The page has not changed (If-None-Match matched its ETag)',
    },
  },
});
