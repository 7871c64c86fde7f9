import type { Db } from '../db/open.js';
import { HttpError } from '../http/errors.js';

/**
 * References (spec: References). Every stored id is a uuid and always works; a reference (slug, camera_id,
 * V-<n>, email) works too. Resolution is always inside the caller's tenant. Unknown or ambiguous: 404 in a
 * path, 400 in a query filter.
 */
export interface RefKind {
  /** For messages: "shop", "camera", "customer", "person". */
  noun: string;
  /** The thing's id if a row with this uuid exists in the tenant. */
  byId(db: Db, tenantId: string, id: string): Promise<string | undefined>;
  /** Ids of the tenant's rows this reference names (more than one means ambiguous). */
  byRef(db: Db, tenantId: string, ref: string): Promise<string[]>;
}

export type Place = 'path' | 'query';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuid.test(value);
}

export type Resolution = { id: string } | { id: undefined; why: 'unknown' | 'ambiguous' };

/** Resolution without an opinion on the status code. */
export async function lookup(db: Db, kind: RefKind, tenantId: string, value: string): Promise<Resolution> {
  const v = value.trim();
  if (isUuid(v)) {
    const id = await kind.byId(db, tenantId, v.toLowerCase());
    if (id) return { id };
  }
  if (v === '') return { id: undefined, why: 'unknown' };
  const ids = [...new Set(await kind.byRef(db, tenantId, v))];
  if (ids.length === 1) return { id: ids[0]! };
  return { id: undefined, why: ids.length > 1 ? 'ambiguous' : 'unknown' };
}

/** Resolves or throws: 404 not_found for a path, 400 invalid_request for a query filter. */
export async function resolve(db: Db, kind: RefKind, tenantId: string, value: string, place: Place): Promise<string> {
  const r = await lookup(db, kind, tenantId, value);
  if (r.id !== undefined) return r.id;
  const Noun = kind.noun[0]!.toUpperCase() + kind.noun.slice(1);
  if (place === 'path') {
    throw new HttpError(404, 'not_found', r.why === 'ambiguous' ? `"${value}" names more than one ${kind.noun}; use its id.` : `${Noun} "${value}" was not found.`);
  }
  throw new HttpError(
    400,
    'invalid_request',
    r.why === 'ambiguous' ? `"${value}" names more than one ${kind.noun}; use its id instead.` : `There is no ${kind.noun} "${value}" in your company.`,
  );
}
