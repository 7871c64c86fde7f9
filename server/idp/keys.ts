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

function write(file: string, stored: Stored): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(stored, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, file);
  fs.chmodSync(file, 0o600);
}

/**
 * Loads (or makes) the keys; rotates the signing key when it is older than ROTATE_AFTER_DAYS. Several head-office
 * processes share the data folder (docs/scale-out.md): the file is read, made or rotated under a lock file, so two
 * processes starting at once agree on one key set, and a process that meets a token signed with a key it does not
 * know (another process rotated since it started) reads the file again before refusing it.
 */
export async function loadSigningKeys(dataDir: string, now = Date.now()): Promise<SigningKeys> {
  const file = path.join(dataDir, KEY_FILE);
  const { stored, rotated } = await underLock(file, async () => {
    let stored = readStored(file);
    let rotated = false;
    if (!stored) {
      stored = { codeKey: randomBytes(32).toString('base64url'), keys: [await newKey()] };
      write(file, stored);
    } else if (now - Date.parse(stored.keys[0]!.createdAt) > ROTATE_AFTER_DAYS * 86_400_000) {
      stored = { ...stored, keys: [await newKey(), stored.keys[0]!] };
      write(file, stored);
      rotated = true;
    }
    return { stored, rotated };
  });
  const current = stored.keys[0]!;
  const privateKey = (await importJWK(current.privateJwk as JWK, 'RS256')) as KeyObject;
  const jwks: JSONWebKeySet = { keys: stored.keys.map(publicOf) };
  let local = createLocalJWKSet(jwks);
  let lastRead = 0;
  const getKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await local(header, token);
    } catch (err) {
      // A kid this process does not know: another process may have rotated. The file is read again, at most every 5 s.
      if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || Date.now() - lastRead < 5000) throw err;
      lastRead = Date.now();
      const again = readStored(file);
      if (!again) throw err;
      jwks.keys = again.keys.map(publicOf);
      local = createLocalJWKSet(jwks);
      return await local(header, token);
    }
  };
  return {
    kid: current.kid,
    jwks,
    getKey,
    codeKey: Buffer.from(stored.codeKey, 'base64url'),
    file,
    rotated,
    sign: (claims, subject, audience, issuer, lifeS) => {
      const iat = Math.floor(Date.now() / 1000);
      return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: current.kid, typ: 'JWT' }).setSubject(subject).setAudience(audience).setIssuer(issuer).setIssuedAt(iat).setExpirationTime(iat + lifeS).sign(privateKey);
    },
  };
}

function readStored(file: string): Stored | undefined {
  if (!fs.existsSync(file)) return undefined;
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

/** A lock file older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 30_000;

/** Runs fn while holding `<file>.lock` (made with O_EXCL; several processes may share the folder). */
async function underLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  // The data folder may not exist yet: with FOOTFALL_ENCRYPTION_KEY and PostgreSQL nothing else has made it by now.
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const lock = `${file}.lock`;
  const giveUp = Date.now() + 2 * STALE_LOCK_MS;
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) fs.rmSync(lock, { force: true });
      else if (Date.now() > giveUp) throw new Error(`${lock} is held by another process; remove it if no head office is starting`);
      else await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}
