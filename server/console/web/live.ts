import { raw } from './api.js';
import { readSse } from './sse.js';

/**
 * Live view: GET /api/cameras/{id}/live (one camera) or GET /api/sites/{site}/live (every switched-on camera of a
 * shop in one stream, for the grid: a browser opens at most six connections to a host over HTTP/1.1), read with
 * fetch() streaming (EventSource cannot send the Authorization header). Events: `waiting` at once, then `frame`
 * about 13 times a second per camera, and `end` when the view reaches its five minutes. Each frame becomes a blob:
 * URL (the CSP allows blob: images); the previous one is released. Aborting the fetch closes the connection, which
 * tells head office to stop the shop PC's upload: stop() does it, and so does leaving the page (the page's signal).
 */
/**
 * How long a view waits for the shop PC's first picture, and for the next one, before giving up with a reason:
 * a shop PC that answers sends its first picture within about two seconds (docs/console.md, Live view).
 */
export const LIVE_GIVE_UP_MS = 8000;

export interface LiveView {
  frame(url: string): void;
  status(text: string): void;
  ended(text: string): void;
}

/** One picture being watched: its give-up timer and its current blob: URL. */
class Picture {
  private lastUrl = '';
  private silence = 0;
  done = false;

  constructor(
    private readonly view: LiveView,
    /** Called once when this picture has ended (gave up, or the stream ended). */
    private readonly over: () => void,
  ) {}

  /** (Re)starts the wait for the next picture. */
  expect(first: boolean): void {
    clearTimeout(this.silence);
    this.silence = window.setTimeout(
      () =>
        this.finish(
          first
            ? `No picture came from the shop PC in ${LIVE_GIVE_UP_MS / 1000} seconds: it may be offline, busy or unable to open this camera. Run the shop check, then try again.`
            : `The shop PC stopped sending pictures (nothing for ${LIVE_GIVE_UP_MS / 1000} seconds): it may have gone offline or lost the camera.`,
        ),
      LIVE_GIVE_UP_MS,
    );
  }

  show(base64: string): void {
    if (this.done) return;
    this.expect(false);
    const url = URL.createObjectURL(jpegOf(base64));
    this.view.frame(url);
    if (this.lastUrl) URL.revokeObjectURL(this.lastUrl);
    this.lastUrl = url;
  }

  status(text: string): void {
    if (!this.done) this.view.status(text);
  }

  finish(text: string): void {
    clearTimeout(this.silence);
    if (this.done) return;
    this.done = true;
    if (text) this.view.ended(text);
    this.over();
  }

  release(): void {
    if (this.lastUrl) URL.revokeObjectURL(this.lastUrl);
    this.lastUrl = '';
  }
}

/**
 * Reads one live stream into `pictures`: `route` says which picture a frame's data is for and its base64 JPEG.
 * Ends every picture when the stream ends; aborts the stream when every picture has ended.
 */
function stream(
  path: string,
  pageSignal: AbortSignal,
  pictures: Picture[],
  ac: AbortController,
  route: (data: string) => { picture?: Picture; jpeg: string },
  waiting: (data: string) => void,
): void {
  const onLeave = () => {
    ac.abort();
    for (const p of pictures) p.release();
  };
  pageSignal.addEventListener('abort', onLeave);
  const endAll = (text: string) => {
    pageSignal.removeEventListener('abort', onLeave);
    for (const p of pictures) p.finish(text);
  };
  void (async () => {
    try {
      for (const p of pictures) p.expect(true);
      const res = await raw(path, ac.signal);
      for (const p of pictures) p.status('Waiting for the shop PC to send pictures…');
      let reason: string | undefined;
      await readSse(res, ({ event, data }) => {
        if (event === 'waiting') {
          waiting(data);
          return pictures.every((p) => p.done);
        } else if (event === 'frame') {
          const { picture, jpeg } = route(data);
          picture?.show(jpeg);
        } else if (event === 'end') {
          reason = data.includes('max_duration') ? 'The live view stops after five minutes. Press “Watch live” to go on watching.' : 'Head office ended the live view.';
          return true;
        }
        return false;
      });
      endAll(reason ?? 'The live view ended.');
    } catch (err) {
      if (ac.signal.aborted) return endAll(pictures.every((p) => p.done) ? '' : 'Live view stopped.');
      endAll(err instanceof Error ? `The live view failed: ${err.message}` : 'The live view failed.');
    }
  })();
}

/** One camera live. */
export function watchLive(cameraId: string, pageSignal: AbortSignal, view: LiveView): { stop(): void } {
  const ac = new AbortController();
  const picture = new Picture(view, () => ac.abort());
  stream(
    `/api/cameras/${encodeURIComponent(cameraId)}/live`,
    pageSignal,
    [picture],
    ac,
    (data) => ({ picture, jpeg: data }),
    (data) => endIfDown(picture, safeJson(data)),
  );
  return {
    stop() {
      picture.finish('Live view stopped.');
      picture.release();
    },
  };
}

/**
 * Every switched-on camera of a shop live in one stream: `views` by camera id (uuid). A camera that sends nothing
 * for LIVE_GIVE_UP_MS gives up on its own; the stream closes when every camera has given up.
 */
export function watchShopLive(site: string, pageSignal: AbortSignal, views: Map<string, LiveView>): void {
  const ac = new AbortController();
  const byCamera = new Map<string, Picture>();
  const pictures: Picture[] = [];
  for (const [id, view] of views) {
    const p = new Picture(view, () => {
      if (pictures.every((x) => x.done)) ac.abort();
    });
    byCamera.set(id, p);
    pictures.push(p);
  }
  stream(
    `/api/sites/${encodeURIComponent(site)}/live`,
    pageSignal,
    pictures,
    ac,
    (data) => {
      const f = JSON.parse(data) as { camera: string; jpeg: string };
      return { picture: byCamera.get(f.camera), jpeg: f.jpeg };
    },
    (data) => {
      const cameras = (safeJson(data) as { cameras?: (CameraState & { camera: string })[] } | null)?.cameras ?? [];
      for (const c of cameras) {
        const p = byCamera.get(c.camera);
        if (p) endIfDown(p, c);
      }
    },
  );
}

/** A camera's last reported state, in the stream's `waiting` event (absent from an older head office). */
interface CameraState {
  connected?: boolean | null;
  connection_reason?: string | null;
}

const safeJson = (data: string): unknown => {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
};

/** Why a camera that the shop PC reports as not connecting has no live picture, in words (its reason word kept). */
const DOWN_WORDS: Record<string, string> = {
  unreachable: 'the shop PC cannot reach it on the network',
  auth_failed: 'it refuses the camera user name or password',
  no_stream: 'it sends no video on this stream path',
  timeout: 'it does not answer in time',
  decode_error: 'its video cannot be decoded',
  disabled: 'it is switched off',
};

export function downText(reason: string | null | undefined): string {
  const words = reason ? DOWN_WORDS[reason] : undefined;
  return `This camera is not connecting${reason ? ` (${reason})` : ''}${words ? `: ${words}` : ''}, so there is no live picture. Check its power, cable and settings, then run “Check connection”.`;
}

/** Ends a picture at once when head office knows its camera is down (the shop PC is still connecting to it: wait). */
function endIfDown(picture: Picture, state: unknown): void {
  const s = (state ?? {}) as CameraState;
  if (s.connected === false && s.connection_reason !== 'connecting') picture.finish(downText(s.connection_reason));
}

function jpegOf(base64: string): Blob {
  const bin = atob(base64.trim());
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: 'image/jpeg' });
}
