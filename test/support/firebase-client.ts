import { deleteApp, initializeApp, type FirebaseApp } from 'firebase/app';
import { connectAuthEmulator, initializeAuth, inMemoryPersistence, type Auth } from 'firebase/auth';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { expect } from 'vitest';
import type { Harness, Reply, RequestOpts } from './harness.js';

/**
 * The real Firebase JS SDK (firebase/app + firebase/auth, Node build) pointed at a local provider with
 * connectAuthEmulator: head office's embedded provider, or the Firebase Auth emulator. One app per call.
 */
export interface FirebaseClient {
  app: FirebaseApp;
  auth: Auth;
  close(): Promise<void>;
}

let n = 0;

export function firebaseClient(providerUrl: string, projectId: string, apiKey = 'any-api-key'): FirebaseClient {
  const app = initializeApp({ apiKey, projectId, authDomain: `${projectId}.firebaseapp.com` }, `footfall-test-${process.pid}-${++n}`);
  const auth = initializeAuth(app, { persistence: inMemoryPersistence });
  connectAuthEmulator(auth, providerUrl, { disableWarnings: true });
  return { app, auth, close: () => deleteApp(app) };
}

/** A logger at info that keeps every line, for tests that check what head office logs. */
export function capturedLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

/** The header and claims of a JWT, unverified (for assertions). */
export function jwtParts(token: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [h, c] = token.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), claims: JSON.parse(Buffer.from(c!, 'base64url').toString()) };
}

/** A call to a `/auth` route through the harness; every envelope must carry the request's id as `requestId`. */
export async function authCall<T = any>(h: Harness, method: string, p: string, opts: RequestOpts = {}): Promise<Reply<T>> {
  const r = await h.request<T>(method, p, opts);
  expect((r.body as { requestId?: string }).requestId, `${method} ${p}`).toBe(r.headers.get('x-request-id'));
  return r;
}
