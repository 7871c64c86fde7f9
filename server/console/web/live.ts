import { raw } from './api.js';

/**
 * A camera's live view: GET /api/cameras/{id}/live read with fetch() streaming (EventSource cannot send the
 * Authorization header). Events: `waiting` at once, then `frame` (a base64 JPEG) about 13 times a second, and
 * `end` when the view reaches its five minutes. Each frame becomes a blob: URL (the CSP allows blob: images); the
 * previous one is released. Aborting the fetch closes the connection, which tells head office to stop the shop
 * PC's upload: stop() does it, and so does leaving the page (the page's signal).
 */
export interface LiveView {
  frame(url: string): void;
  status(text: string): void;
  ended(text: string): void;
}

export function watchLive(cameraId: string, pageSignal: AbortSignal, view: LiveView): { stop(): void } {
  const ac = new AbortController();
  let lastUrl = '';
  let stopped = false;
  const release = () => {
    if (lastUrl) URL.revokeObjectURL(lastUrl);
    lastUrl = '';
  };
  const onLeave = () => {
    ac.abort();
    release();
  };
  pageSignal.addEventListener('abort', onLeave);

  const finish = (text: string) => {
    pageSignal.removeEventListener('abort', onLeave);
    if (stopped) return;
    stopped = true;
    ac.abort();
    view.ended(text);
  };

  void (async () => {
    try {
      const res = await raw(`/api/cameras/${encodeURIComponent(cameraId)}/live`, ac.signal);
      view.status('Waiting for the shop PC to send pictures…');
      const reason = await readEvents(res, (event, data) => {
        if (event === 'frame') {
          const url = URL.createObjectURL(jpegOf(data));
          view.frame(url);
          if (lastUrl) URL.revokeObjectURL(lastUrl);
          lastUrl = url;
        } else if (event === 'waiting') {
          view.status('Waiting for the shop PC to send pictures…');
        } else if (event === 'end') {
          return data.includes('max_duration') ? 'The live view stops after five minutes. Press “Watch live” to go on watching.' : 'Head office ended the live view.';
        }
        return undefined;
      });
      finish(reason ?? 'The live view ended.');
    } catch (err) {
      if (ac.signal.aborted) return finish('Live view stopped.');
      finish(err instanceof Error ? `The live view failed: ${err.message}` : 'The live view failed.');
    }
  })();

  return {
    stop() {
      finish('Live view stopped.');
      release();
    },
  };
}

/** Reads server-sent events until the stream ends or `onEvent` returns a reason to stop. */
async function readEvents(res: Response, onEvent: (event: string, data: string) => string | undefined): Promise<string | undefined> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return undefined;
      buf += value.replace(/\r\n?/g, '\n');
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const name = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (name === 'event') event = val;
          else if (name === 'data') data.push(val);
        }
        if (data.length === 0 && event === 'message') continue;
        const stop = onEvent(event, data.join('\n'));
        if (stop) return stop;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function jpegOf(base64: string): Blob {
  const bin = atob(base64.trim());
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: 'image/jpeg' });
}
