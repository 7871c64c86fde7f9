import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { OpenApiMismatch, responseChecker, type ResponseChecker } from '../../test/support/openapi-check.js';

/**
 * The embedded provider's real answers against the OpenAPI document (server/idp/openapi.ts). The provider's other
 * tests call it with the Firebase SDK and raw fetch, which the harness does not check; here every answer is fetched
 * the way the SDK sends it (JSON to Identity Toolkit, form-encoded to Secure Token) and checked explicitly.
 */
type Json = Record<string, any>;

let h: Harness;
let co: Company;
let served: Json;
let checker: ResponseChecker;

interface Answer {
  method: string;
  path: string;
  status: number;
  contentType: string;
  body: any;
}

async function call(method: 'GET' | 'POST', path: string, body?: Record<string, string> | URLSearchParams): Promise<Answer> {
  const form = body instanceof URLSearchParams;
  const res = await fetch(h.url + path, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'Content-Type': form ? 'application/x-www-form-urlencoded' : 'application/json' }, body: form ? body.toString() : JSON.stringify(body) }),
  });
  return { method, path, status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.json() };
}

const toolkit = (op: string, body: Record<string, string>) => call('POST', `/identitytoolkit.googleapis.com/v1/accounts:${op}?key=any-key`, body);
const refresh = (token: string) => call('POST', '/securetoken.googleapis.com/v1/token?key=any-key', new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }));

beforeAll(async () => {
  h = await startHarness();
  co = await h.company();
  served = (await h.request<Json>('GET', '/api/openapi.json')).body;
  checker = responseChecker(served);
});
afterAll(async () => {
  await h?.close();
});

describe("the embedded provider's answers match the OpenAPI document", () => {
  it('sign-in, lookup, refresh (form-encoded) and JWKS', async () => {
    const signIn = await toolkit('signInWithPassword', { email: co.ownerEmail, password: co.ownerPassword, returnSecureToken: 'true' });
    expect(signIn.status, JSON.stringify(signIn.body)).toBe(200);
    expect(signIn.body.kind).toBe('identitytoolkit#VerifyPasswordResponse');
    expect(() => checker.check(signIn)).not.toThrow();

    const lookup = await toolkit('lookup', { idToken: signIn.body.idToken });
    expect(lookup.status).toBe(200);
    expect(lookup.body.users[0].email).toBe(co.ownerEmail);
    expect(() => checker.check(lookup)).not.toThrow();

    const refreshed = await refresh(signIn.body.refreshToken);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(signIn.body.refreshToken);
    expect(() => checker.check(refreshed)).not.toThrow();

    const jwks = await call('GET', '/.well-known/jwks.json');
    expect(jwks.status).toBe(200);
    expect(() => checker.check(jwks)).not.toThrow();
  });

  it("errors are Identity Toolkit's envelope, with the statuses the document lists", async () => {
    const wrong = await toolkit('signInWithPassword', { email: co.ownerEmail, password: 'not-the-password' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toBe('INVALID_LOGIN_CREDENTIALS');
    expect(() => checker.check(wrong)).not.toThrow();

    const used = await refresh('not-a-refresh-token');
    expect(used.status).toBe(400);
    expect(() => checker.check(used)).not.toThrow();

    const signUp = await toolkit('signUp', { email: 'someone@example.test', password: 'a-good-password' });
    expect(signUp.status).toBe(400);
    expect(signUp.body.error.message).toMatch(/^ADMIN_ONLY_OPERATION/);
    expect(() => checker.check(signUp)).not.toThrow();

    const phone = await toolkit('sendVerificationCode', { phoneNumber: '12' });
    expect(phone.status).toBe(400);
    expect(() => checker.check(phone)).not.toThrow();

    // A method the provider does not have is 404 NOT_FOUND, on a documented path.
    const get = await call('GET', '/securetoken.googleapis.com/v1/token');
    expect(get.status).toBe(404);
    expect(get.body.error.status).toBe('NOT_FOUND');
  });

  it('catches a broken copy: a schema the provider does not answer', async () => {
    const broken = structuredClone(served);
    broken.components.schemas.GoogleError.properties.error.required.push('details');
    const tokenOk = broken.paths['/securetoken.googleapis.com/v1/token'].post.responses['200'].content['application/json'].schema;
    tokenOk.properties.expires_in = { type: 'integer' };
    const strict = responseChecker(broken);

    const wrong = await toolkit('signInWithPassword', { email: co.ownerEmail, password: 'not-the-password' });
    expect(() => strict.check(wrong)).toThrow(OpenApiMismatch);
    expect(() => strict.check(wrong)).toThrow(/must have required property 'details'/);
    expect(() => checker.check(wrong)).not.toThrow();

    const signIn = await toolkit('signInWithPassword', { email: co.ownerEmail, password: co.ownerPassword });
    const refreshed = await refresh(signIn.body.refreshToken);
    expect(refreshed.status).toBe(200);
    expect(() => strict.check(refreshed)).toThrow(/\/expires_in must be integer/);
    expect(() => checker.check(refreshed)).not.toThrow();
  });
});
