import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { IdpError } from './errors.js';

/**
 * Text messages of the embedded provider (FOOTFALL_SMS). `log`: the message, code included, goes to the server log
 * (a LAN install without a gateway: whoever reads the log passes the code on). `http`: one JSON POST
 * `{"to": "+E.164", "text": "..."}` to FOOTFALL_SMS_URL, `Authorization: Bearer FOOTFALL_SMS_TOKEN` when set; any 2xx
 * is sent, anything else (or no answer within FOOTFALL_IDP_TIMEOUT_MS) an `unavailable` IdpError naming the reason.
 */
export async function sendSms(config: Config, log: Logger, to: string, text: string): Promise<void> {
  if (config.FOOTFALL_SMS === 'log') {
    log.info({ sms_to: to, sms_text: text }, 'text message (FOOTFALL_SMS=log: not sent, read it here)');
    return;
  }
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (config.FOOTFALL_SMS_TOKEN) headers.Authorization = `Bearer ${config.FOOTFALL_SMS_TOKEN}`;
  let res: Response;
  try {
    res = await fetch(config.FOOTFALL_SMS_URL!, { method: 'POST', headers, body: JSON.stringify({ to, text }), signal: AbortSignal.timeout(config.FOOTFALL_IDP_TIMEOUT_MS), redirect: 'error' });
  } catch (err) {
    const timeout = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    log.warn({ reason: timeout ? 'timeout' : 'unreachable' }, 'SMS gateway failed');
    throw new IdpError('SMS_SEND_FAILED', timeout ? 'the SMS gateway did not answer in time' : 'the SMS gateway could not be reached', 502, 'unavailable');
  }
  await res.body?.cancel().catch(() => {});
  if (res.status < 200 || res.status > 299) {
    log.warn({ reason: 'http_status', gateway_status: res.status }, 'SMS gateway refused the message');
    throw new IdpError('SMS_SEND_FAILED', `the SMS gateway answered HTTP ${res.status}`, 502, 'unavailable');
  }
}
