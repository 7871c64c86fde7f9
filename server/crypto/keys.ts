import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

/**
 * The server key (32 bytes): FOOTFALL_ENCRYPTION_KEY, or a key file created on first start (mode 0600).
 * Sub-keys are derived with HKDF so that one purpose never reuses another's key.
 */
export interface Keys {
  /** Where the key came from, for the start-up log; `none` when the key file could not be read (see unusableKeys). */
  source: 'env' | 'file' | 'none';
  /** Why there is no usable key; undefined when there is one. Every method below then throws NoEncryptionKeyError. */
  problem?: string;
  /** AES-256-GCM: secrets at rest (camera passwords, broker secrets). */
  encrypt(plain: string): string;
  decrypt(sealed: string): string;
  /** HMAC-SHA-256 of a short code (invitation, enrolment), so a database leak alone cannot test guesses. */
  codeHash(code: string): string;
  /**
   * 32 bytes for sealing the arrivals feed cursor (server/visits/cursor.ts). Without a usable server key: random per
   * process (cursors then stop parsing at a restart, and clients start again from the latest arrivals).
   */
  cursorKey: Buffer;
}

export function loadKeys(config: Config): Keys {
  if (config.FOOTFALL_ENCRYPTION_KEY) return makeKeys(Buffer.from(config.FOOTFALL_ENCRYPTION_KEY, 'base64'), 'env');
  const file = path.join(config.dataDir, 'encryption.key');
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a base64 32-byte key; restore it from backup (secrets encrypted with it are unreadable without it).`);
  return makeKeys(key, 'file');
}

/** Thrown by an unusable key's methods; routes that need the key answer 503 no_encryption_key. */
export class NoEncryptionKeyError extends Error {}

/**
 * Keys for a server whose key file exists but cannot be used (unreadable, not 32 bytes). Start-up goes on so people
 * can still sign in and read their data, but everything that seals, opens or hashes a secret is refused: opening
 * shops, enrolling shop PCs, camera passwords, codes. The log says why at start-up.
 */
export function unusableKeys(problem: string): Keys {
  const fail = (): never => {
    throw new NoEncryptionKeyError(problem);
  };
  return { source: 'none', problem, encrypt: fail, decrypt: fail, codeHash: fail, cursorKey: randomBytes(32) };
}

function derive(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `footfall:${purpose}`, 32));
}

function makeKeys(master: Buffer, source: Keys['source']): Keys {
  const enc = derive(master, 'secrets-at-rest');
  const mac = derive(master, 'code-hash');
  return {
    source,
    cursorKey: derive(master, 'feed-cursor'),
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', enc, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
    },
    decrypt(sealed) {
      const [v, iv, tag, body] = sealed.split(':');
      if (v !== 'v1' || !iv || !tag || body === undefined) throw new Error('unknown sealed-secret format');
      const decipher = createDecipheriv('aes-256-gcm', enc, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
    codeHash(code) {
      return createHmac('sha256', mac).update(code).digest('hex');
    },
  };
}
