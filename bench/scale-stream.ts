/**
 * The time from a visit's publish to its being stored, for the scale benchmark with an external broker, where the
 * shop PC's PUBACK comes from the broker before head office has stored anything. Read from the arrivals stream
 * (`GET /api/visits/stream`, server-sent events sent after the commit) of every head-office process: the first
 * process to announce a visit id counts. A visit that extends its customer's stay (the same customer at the same
 * shop within the visit gap) makes no arrival and so no sample; every other visit does.
 */
import { progress } from './util.js';

const VISIT_ID = /"visit_id":"([^"]+)"/;
/** Publish times are forgotten after this long (the visits that make no arrival). */
const FORGET_MS = 120_000;

export class StoredClock {
  private readonly sentAt = new Map<string, number>();
  private lat: number[] = [];
  private readonly aborts: AbortController[] = [];
  private lastForget = performance.now();

  /** Load's `sent` callback. */
  readonly sent = (id: string, at: number): void => {
    this.sentAt.set(id, at);
  };

  /** Follows one head-office process's arrivals stream until close(). */
  async follow(url: string, token: string): Promise<void> {
    const abort = new AbortController();
    this.aborts.push(abort);
    const res = await fetch(`${url}/api/visits/stream`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: abort.signal });
    if (res.status !== 200 || !res.body) throw new Error(`arrivals stream: ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    void (async () => {
      let text = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const now = performance.now();
          text += value;
          let end: number;
          while ((end = text.indexOf('\n\n')) >= 0) {
            const id = VISIT_ID.exec(text.slice(0, end))?.[1];
            text = text.slice(end + 2);
            if (id === undefined) continue;
            const at = this.sentAt.get(id);
            if (at === undefined) continue;
            this.sentAt.delete(id);
            this.lat.push(now - at);
          }
        }
      } catch (err) {
        if (!abort.signal.aborted) progress(`arrivals stream of ${url} ended: ${(err as Error).message}`);
      }
    })();
  }

  /** The publish-to-stored times (ms) since the last call. */
  take(): number[] {
    const out = this.lat;
    this.lat = [];
    const now = performance.now();
    if (now - this.lastForget > FORGET_MS) {
      for (const [id, at] of this.sentAt) if (now - at > FORGET_MS) this.sentAt.delete(id);
      this.lastForget = now;
    }
    return out;
  }

  close(): void {
    for (const a of this.aborts) a.abort();
  }
}
