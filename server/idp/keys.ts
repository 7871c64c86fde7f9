import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, type JSONWebKeySet, type JWK, type JWTPayload, type JWTVerifyGetKey, type KeyObject } from 'jose';
import { z } from 'zod';

/**
 * The embedded provider's secrets, in one file of the data dir (mode 0600): the RS256 keys that sign ID tokens
 * (newest first; the previous one is kept to verify tokens signed before a rotation) and the HMAC key of the
 * one-time codes. Made on first start. A key older than ROTATE_AFTER_DAYS is replaced at start (docs/auth-service.md,
 * "Keys and rotation").
 */
export const KEY_FILE = 'idp-keys.json';
export const ROTATE_AFTER_DAYS = 90;

const Stored = z.object({
  codeKey: z.string().min(43),
  keys: z.array(z.object({ kid: z.string().min(1), createdAt: z.string(), privateJwk: z.record(z.string(), z.unknown()) })).min(1),
});
type Stored = z.infer<typeof Stored>;

export interface SigningKeys {
  kid: string;
  sign(claims: JWTPayload, subject: string, audience: string, issuer: string, lifeS: number): Promise<string>;
  jwks: JSONWebKeySet;
  getKey: JWTVerifyGetKey;
  codeKey: Buffer;
  file: string;
  rotated: boolean;
}

async function newKey(): Promise<Stored['keys'][number]> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
  return { kid: randomUUID().replace(/-/g, ''), createdAt: new Date().toISOString(), privateJwk: { ...(await exportJWK(privateKey)) } };
}

function publicOf(k: Stored['keys'][number]): JWK {
  const { kty, n, e } = k.privateJwk as JWK;
  return { kty, n, e, kid: k.kid, alg: 'RS256', use: 'sig' };
}

/**
 * Writes the key file through a temporary file. `replace` false: only if there is none yet, else leaves the one
 * there and answers false (two processes starting at once on one data folder: the second reads the first's keys,
 * rather than signing with keys the file does not hold).
 */
function write(file: string, stored: Stored, replace: boolean): boolean {
  // The data folder may not exist yet: with FOOTFALL_ENCRYPTION_KEY and PostgreSQL nothing else has made it by now.
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(stored, null, 2), { mode: 0o600 });
  try {
    if (replace) fs.renameSync(tmp, file);
    else fs.linkSync(tmp, file); // fails with EEXIST when another process made it first
  } catch (err) {
    if (!replace && (err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  fs.chmodSync(file, 0o600);
  return true;
}

function read(file: string): Stored {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    json = undefined;
  }
  const parsed = Stored.safeParse(json);
  if (!parsed.success) throw new Error(`${file} is not a key file of the embedded identity provider; move it away to make a new one (signs everyone out)`);
  if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600);
  return parsed.data;
}

/** Loads (or makes) the keys; rotates the signing key when it is older than ROTATE_AFTER_DAYS. */
export async function loadSigningKeys(dataDir: string, now = Date.now()): Promise<SigningKeys> {
  const file = path.join(dataDir, KEY_FILE);
  let stored = fs.existsSync(file) ? read(file) : undefined;
  let rotated = false;
  if (!stored) {
    const made = { codeKey: randomBytes(32).toString('base64url'), keys: [await newKey()] };
    stored = write(file, made, false) ? made : read(file);
  } else if (now - Date.parse(stored.keys[0]!.createdAt) > ROTATE_AFTER_DAYS * 86_400_000) {
    stored = { ...stored, keys: [await newKey(), stored.keys[0]!] };
    write(file, stored, true);
    rotated = true;
  }
  const current = stored.keys[0]!;
  const privateKey = (await importJWK(current.privateJwk as JWK, 'RS256')) as KeyObject;
  const jwks: JSONWebKeySet = { keys: stored.keys.map(publicOf) };
  return {
    kid: current.kid,
    jwks,
    getKey: createLocalJWKSet(jwks),
    codeKey: Buffer.from(stored.codeKey, 'base64url'),
    file,
    rotated,
    sign: (claims, subject, audience, issuer, lifeS) => {
      const iat = Math.floor(Date.now() / 1000);
      return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: current.kid, typ: 'JWT' }).setSubject(subject).setAudience(audience).setIssuer(issuer).setIssuedAt(iat).setExpirationTime(iat + lifeS).sign(privateKey);
    },
  };
}
