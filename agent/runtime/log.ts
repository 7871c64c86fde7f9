import { pino, type Logger } from 'pino';

/**
 * The agent's structured log (JSON lines on stdout; journald keeps them under systemd). Secrets never belong in a
 * log line; the redaction is a safety net for an object logged whole by mistake.
 */
export function createAgentLogger(level: string = 'info'): Logger {
  return pino({
    name: 'footfall-agent',
    level,
    base: { pid: process.pid },
    redact: {
      paths: ['token', 'password', '*.token', '*.password', 'broker.password', 'config.token', 'config.broker.password', 'headers.authorization', 'headers.Authorization'],
      censor: '***',
    },
  });
}
