import { pino, type Logger } from 'pino';

/** Structured JSON logs on stdout. Authorization headers and passwords never reach a log line. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'footfall-head-office' },
    redact: { paths: ['password', '*.password', 'req.headers.authorization', 'refresh_token', 'access_token'], censor: '[redacted]' },
  });
}
