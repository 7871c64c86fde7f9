import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback SMS gateway for tests: takes what head office sends with FOOTFALL_SMS=http (JSON POST {to, text},
 * optional bearer token) and keeps it. `failFor` numbers get the status given (a gateway refusing a message).
 */
export interface SmsMessage {
  to: string;
  text: string;
  authorization: string | undefined;
}

export interface SmsGateway {
  url: string;
  token: string;
  messages: SmsMessage[];
  failFor: Map<string, number>;
  /** The 6-digit code of the newest message to this number. */
  codeFor(to: string): string;
  close(): Promise<void>;
}

export async function startSmsGateway(token = 'sms-gateway-token'): Promise<SmsGateway> {
  const messages: SmsMessage[] = [];
  const failFor = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || !(req.headers['content-type'] ?? '').includes('application/json')) {
        res.writeHead(415).end();
        return;
      }
      if (req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(401).end();
        return;
      }
      const body = JSON.parse(raw) as { to: string; text: string };
      const fail = failFor.get(body.to);
      if (fail) {
        res.writeHead(fail, { 'Content-Type': 'application/json' }).end('{"error":"refused"}');
        return;
      }
      messages.push({ to: body.to, text: body.text, authorization: req.headers.authorization });
      res.writeHead(202, { 'Content-Type': 'application/json' }).end('{"queued":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/send`;
  return {
    url,
    token,
    messages,
    failFor,
    codeFor(to) {
      const m = [...messages].reverse().find((x) => x.to === to);
      const code = m && /\b(\d{6})\b/.exec(m.text)?.[1];
      if (!code) throw new Error(`no code sent to ${to}`);
      return code;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
