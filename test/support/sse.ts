/** One server-sent event as a test sees it. `comment` is set on keep-alive blocks (`: ...`), which have no data. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
  comment?: string;
  /** When it arrived (Date.now()). */
  at: number;
}

/**
 * Reads a server-sent-event response to its end (or until it is aborted or cancelled), calling `onEvent` for each
 * block in order. Resolves when the stream is over; never rejects.
 */
export async function pumpSse(res: Response, onEvent: (e: SseEvent) => void): Promise<void> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev: SseEvent = { event: 'message', data: '', at: Date.now() };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          ev.comment = line.slice(1).trim();
          continue;
        }
        const k = line.indexOf(':');
        const key = k < 0 ? line : line.slice(0, k);
        const v = k < 0 ? '' : line.slice(k + 1).replace(/^ /, '');
        if (key === 'id') ev.id = v;
        else if (key === 'event') ev.event = v;
        else if (key === 'data') ev.data = v;
      }
      if (ev.comment !== undefined) ev.event = 'comment';
      onEvent(ev);
    }
  }
}
