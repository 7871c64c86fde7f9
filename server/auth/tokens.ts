import { hash, randomBytes } from 'node:crypto';

/**
 * Opaque bearer tokens: a kind prefix and 256 bits from the CSPRNG, base64url. Only SHA-256 hashes are stored;
 * the tokens are random enough that a fast hash is the right one.
 */
export type TokenKind = 'access' | 'refresh' | 'agent';

const prefix: Record<TokenKind, string> = { access: 'ffa_', refresh: 'ffr_', agent: 'ffs_' };

export function newToken(kind: TokenKind): string {
  return prefix[kind] + randomBytes(32).toString('base64url');
}

const kinds = Object.keys(prefix) as TokenKind[];

export function tokenKind(token: string): TokenKind | undefined {
  return kinds.find((k) => token.startsWith(prefix[k]));
}

export function hashToken(token: string): string {
  return hash('sha256', token, 'hex'); // one-shot: createHash('sha256').update(token).digest('hex') without the Hash object
}
