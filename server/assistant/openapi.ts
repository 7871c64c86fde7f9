import { z } from 'zod';
import { routeDocs } from '../openapi/registry.js';
import { assistantBody } from './routes.js';

/**
 * The body's limits come from the configuration, so the route validates with a schema made per deployment; the
 * document shows it with the defaults (FOOTFALL_ASSISTANT_MAX_TURNS 24, FOOTFALL_ASSISTANT_MAX_CHARS 2000).
 */
const body = assistantBody({ maxTurns: 24, maxChars: 2000, maxAnswerChars: 8 * 2000 });

export const assistantDocs = routeDocs({
  'POST /api/assistant': {
    summary: 'Ask the assistant',
    description:
      'The client holds the conversation and sends it whole, ending with the user’s question; nothing is kept. Limits shown are the defaults (FOOTFALL_ASSISTANT_MAX_TURNS, FOOTFALL_ASSISTANT_MAX_CHARS).',
    request: { body },
    responses: {
      200: { description: 'The reply and the tools consulted for it', json: z.object({ text: z.string(), used: z.array(z.string()) }) },
      501: '`assistant_off`: not set up on this server',
      502: '`assistant_unavailable`: the model could not answer',
      503: '`assistant_misconfigured`',
    },
  },
});
