import { raw } from './api.js';
import { readSse } from './sse.js';

/**
 * A camera's live view: GET /api/cameras/{id}/live read with fetch() streaming (EventSource cannot send the
 * Authorization header). Events: `waiting` at once, then `frame` (a base64 JPEG) about 13 times a second, and
 * `end` when the view reaches its five minutes. Each frame becomes a blob: URL (the CSP allows blob: images); the
 * previous one is released. Aborting the fetch closes the connection, which tells head office to stop the shop
 * PC's upload: stop() does it, and so does leaving the page (the page's signal).
 */
/**
 * How long the view waits for the shop PC's first picture, and for the next one, before giving up with a reason:
 * a shop PC that answers sends its first picture within about two seconds (docs/console.md, Live view).
 */
export const LIVE_GIVE_UP_MS = 8000;

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

  let silence = 0;
  /** (Re)starts the wait for the next picture. */
  const expect = (first: boolean) => {
    clearTimeout(silence);
    silence = window.setTimeout(
      () =>
        finish(
          first
            ? `No picture came from the shop PC in ${LIVE_GIVE_UP_MS / 1000} seconds: it may be offline, busy or unable to open this camera. Run the shop check, then try again.`
            : `The shop PC stopped sending pictures (nothing for ${LIVE_GIVE_UP_MS / 1000} seconds): it may have gone offline or lost the camera.`,
        ),
      LIVE_GIVE_UP_MS,
    );
  };
  const finish = (text: string) => {
    clearTimeout(silence);
    pageSignal.removeEventListener('abort', onLeave);
    if (stopped) return;
    stopped = true;
    ac.abort();
    view.ended(text);
  };

  void (async () => {
    try {
      expect(true);
      const res = await raw(`/api/cameras/${encodeURIComponent(cameraId)}/live`, ac.signal);
      view.status('Waiting for the shop PC to send pictures…');
      let reason: string | undefined;
      await readSse(res, ({ event, data }) => {
        if (event === 'frame') {
          expect(false);
          const url = URL.createObjectURL(jpegOf(data));
          view.frame(url);
          if (lastUrl) URL.revokeObjectURL(lastUrl);
          lastUrl = url;
        } else if (event === 'waiting') {
          view.status('Waiting for the shop PC to send pictures…');
        } else if (event === 'end') {
          reason = data.includes('max_duration') ? 'The live view stops after five minutes. Press “Watch live” to go on watching.' : 'Head office ended the live view.';
          return true;
        }
        return false;
      });
      finish(reason ?? 'The live view ended.');
    } catch (err) {
      if (ac.signal.aborted) return finish(stopped ? '' : 'Live view stopped.');
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

function jpegOf(base64: string): Blob {
  const bin = atob(base64.trim());
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: 'image/jpeg' });
}
