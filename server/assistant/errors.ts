import { HttpError } from '../http/errors.js';

/**
 * The assistant's own answers (spec: Errors; docs/assistant.md). None of them ever carries the API key or anything the
 * LLM service sent back: the server log has the details under the request id.
 */

/** 501: no FOOTFALL_ASSISTANT_URL on this deployment. */
export const assistantOff = () =>
  new HttpError(501, 'assistant_off', 'The assistant is not set up on this server. Whoever runs head office can turn it on with FOOTFALL_ASSISTANT_URL and FOOTFALL_ASSISTANT_MODEL.');

/** 503: configured, but not usably; `what` names the setting to fix. */
export const assistantMisconfigured = (what: string) => new HttpError(503, 'assistant_misconfigured', `The assistant is set up wrongly on this server: ${what}`);

/** 502: the LLM service is down, failing, too slow or answered nonsense; trying again later may work. */
export const assistantUnavailable = (what: string) => new HttpError(502, 'assistant_unavailable', `The assistant cannot answer right now: ${what}`);
