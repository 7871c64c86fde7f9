import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { authServiceEnvelope, isAuthServicePath } from '../auth-service/errors.js';
import { HttpError } from './errors.js';

/**
 * Requests Node's HTTP parser refuses before Koa sees them: headers or an address over Node's 16 KiB limit, bytes
 * that are not HTTP, a broken chunked body. Node's own answer is a bare status line without a body; this one is the
 * error envelope like every other failure (the /auth one when the request line names an /auth path), then the
 * connection is closed. Register with `server.on('clientError', answerClientError)`.
 */
export function answerClientError(err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex): void {
  // A response already under way on this connection (Node's own check): nothing sane can be added to it.
  const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (err.code === 'ECONNRESET' || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  const e = refusal(err.code);
  const requestId = randomUUID();
  const path = /^[A-Z]+ (\/[^\s?#]*)/.exec(err.rawPacket?.toString('latin1', 0, 4096) ?? '')?.[1] ?? '';
  const body = JSON.stringify(isAuthServicePath(path) ? authServiceEnvelope(e, requestId) : { error: e.code, message: e.message });
  socket.end(
    `HTTP/1.1 ${e.status} ${reasons[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}

const reasons: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

function refusal(code: string | undefined): HttpError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HttpError(431, 'headers_too_large', 'The request headers or address are too long: at most 16 KiB in all.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new HttpError(408, 'request_timeout', 'The request was not received in time.');
    default:
      return new HttpError(400, 'invalid_request', 'The request is not valid HTTP.');
  }
}
