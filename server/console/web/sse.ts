import { ApiError, raw } from './api.js';

/**
 * Server-sent events over fetch() streaming: EventSource cannot send the Authorization header, so the console reads
 * the text itself (the WHATWG event-stream format: `event`, `data`, `id`, `retry` fields, `:` comments, a blank line
 * ends an event) and reconnects like EventSource would, resuming from the last event id.
 */

export interface SseEvent {
  event: string;
  data: string;
  /** The last event id seen so far on this connection (SSE rule: an id field carries over to later events). */
  id: string;
}

/**
 * Reads events until the stream ends or `onEvent` returns true (resolves), or fails (rejects: a network error, or an
 * abort).
 */
export async function readSse(res: Response, onEvent: (e: SseEvent) => boolean | void, onRetry: (ms: number) => void = () => {}): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let lastId = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value.replace(/\r\n?/g, '\n');
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const name = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (name === 'event') event = val;
          else if (name === 'data') data.push(val);
          else if (name === 'id' && !val.includes('\0')) lastId = val;
          else if (name === 'retry' && /^\d+$/.test(val)) onRetry(Number(val));
        }
        if (data.length > 0 && onEvent({ event, data: data.join('\n'), id: lastId }) === true) return;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export type StreamState = { kind: 'connecting' } | { kind: 'open' } | { kind: 'waiting'; ms: number; why: string } | { kind: 'stopped'; why: string };

export interface FollowOptions {
  /** The URL for a connection, resuming after `lastId` (empty: from now). */
  url(lastId: string): string;
  /** The position to start after (the feed's cursor). */
  lastId: string;
  signal: AbortSignal;
  onEvent(e: SseEvent): void;
  onState(s: StreamState): void;
}

/**
 * Follows a stream until `signal` aborts: when it ends, reconnects after the server's `retry` time; after a network
 * error or a 5xx, with a growing delay (1 s, 2 s, 4 s... at most 30 s, with jitter) that starts again once a
 * connection opens. A cursor the server cannot read (400 `invalid_cursor`) is dropped. Any other refusal (an
 * unknown shop, 403) stops, with the API's message; a 401 has already sent the person to sign in.
 */
export function follow(o: FollowOptions): void {
  let lastId = o.lastId;
  let retryMs = 2000;
  let failures = 0;
  void (async () => {
    while (!o.signal.aborted) {
      o.onState({ kind: 'connecting' });
      let wait: number;
      let why: string;
      try {
        const res = await raw(o.url(lastId), o.signal);
        failures = 0;
        o.onState({ kind: 'open' });
        await readSse(
          res,
          (e) => {
            if (e.id) lastId = e.id;
            o.onEvent(e);
          },
          (ms) => (retryMs = ms),
        );
        wait = retryMs;
        why = 'Head office closed the stream.';
      } catch (err) {
        if (o.signal.aborted) return;
        if (err instanceof ApiError && err.code === 'invalid_cursor') {
          lastId = '';
          continue;
        }
        if (err instanceof ApiError && err.status < 500) {
          o.onState({ kind: 'stopped', why: err.message });
          return;
        }
        failures++;
        wait = Math.min(30_000, 1000 * 2 ** (failures - 1)) * (0.8 + Math.random() * 0.4);
        why = err instanceof ApiError ? err.message : 'Head office could not be reached.';
      }
      if (o.signal.aborted) return;
      o.onState({ kind: 'waiting', ms: wait, why });
      await sleep(wait, o.signal);
    }
  })();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
