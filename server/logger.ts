import { isMainThread } from 'node:worker_threads';
import { pino, type Logger } from 'pino';

/**
 * Structured JSON logs on stdout. Authorization headers and passwords never reach a log line.
 *
 * On the main thread the lines are written asynchronously (pino's `destination({ sync: false })`): a line is handed to
 * the kernel off the request path, and lines logged while a write is under way go out together in the next one, so
 * a busy server makes one write per batch of access-log lines instead of one per request. pino flushes what is left
 * synchronously when the process exits (its own exit handler). Worker threads keep synchronous writes (pino's exit
 * flush covers only the main thread).
 */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { service: 'footfall-head-office' },
      redact: { paths: ['password', '*.password', 'req.headers.authorization', 'refresh_token', 'access_token'], censor: '[redacted]' },
    },
    pino.destination({ dest: 1, sync: !isMainThread }),
  );
}
