import { isMainThread } from 'node:worker_threads';
import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * Structured JSON logs on stdout. Authorization headers and passwords never reach a log line.
 *
 * On the main thread, lines logged during one turn of the event loop are written together at its end (one
 * synchronous write by pino's own destination, sonic-boom, which handles partial writes and a full pipe): a busy
 * server makes one write per turn, not one per request, and no thread hop per write (docs/decisions.md, "Log lines
 * written once per event-loop turn"). What is pending is written when the process exits. Worker threads write each
 * line synchronously.
 */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { service: 'footfall-head-office' },
      redact: { paths: ['password', '*.password', 'req.headers.authorization', 'refresh_token', 'access_token'], censor: '[redacted]' },
    },
    isMainThread ? stdoutPerTurn() : pino.destination({ dest: 1, sync: true }),
  );
}

let shared: DestinationStream | undefined;

/** stdout, written once per event-loop turn; one for the process (every logger writes to the same descriptor). */
function stdoutPerTurn(): DestinationStream {
  if (shared) return shared;
  const out = pino.destination({ dest: 1, sync: true });
  let pending = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending === '') return;
    const text = pending;
    pending = '';
    out.write(text);
  };
  process.on('exit', flush);
  shared = {
    write(line: string) {
      pending += line;
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    // logger.flush(): what is pending goes out now.
    flush(cb?: (err?: Error) => void) {
      flush();
      cb?.();
    },
  } as DestinationStream;
  return shared;
}
