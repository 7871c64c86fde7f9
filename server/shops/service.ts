import { randomInt, randomUUID } from 'node:crypto';
import { and, asc, count, eq, isNull } from 'drizzle-orm';
import { ENROLMENT_CODE_ALPHABET, normaliseEnrolmentCode } from '../../shared/agent-api.js';
import { brokerUsername } from '../../shared/topics.js';
import type { Config } from '../config.js';
import type { Keys } from '../crypto/keys.js';
import type { Db } from '../db/open.js';
import { conflict } from '../http/errors.js';
import { shopVisitCount } from '../visits/service.js';
import { IANA_NAMES } from '../console/web/zones-data.js';
import { one, returned } from '../db/query.js';
import { cameras, companies, crossings, enrolmentCodes, shops } from '../db/tables.js';

export type ShopRow = typeof shops.$inferSelect;
export type EnrolmentCodeRow = typeof enrolmentCodes.$inferSelect;

export const DEFAULT_TIMEZONE = 'Asia/Kolkata';

/** Old zone names ICU lists and their IANA names: one table with the console's (server/console/web/zones-data.ts). */
export { IANA_NAMES };

/** Zone names ICU lists and their IANA names, by lower-case spelling. */
const listedZones = new Map<string, string>();
for (const z of Intl.supportedValuesOf('timeZone')) listedZones.set(z.toLowerCase(), IANA_NAMES[z] ?? z);
for (const z of Object.values(IANA_NAMES)) listedZones.set(z.toLowerCase(), z);

/**
 * An IANA zone name ("Area/Location", or UTC) that this server can compute with, in its canonical IANA spelling;
 * undefined otherwise. Abbreviations and offsets ("IST", "+05:30", "EST5EDT") are refused even where Intl accepts
 * them. An old name ICU still lists (Asia/Calcutta, Europe/Kiev) is accepted and given its IANA name; letter case is
 * fixed for names ICU lists.
 */
export function canonicalTimezone(zone: string): string | undefined {
  const name = listedZones.get(zone.toLowerCase()) ?? zone;
  if (name !== 'UTC' && !/^[A-Z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)+$/.test(name)) return undefined;
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return name;
  } catch {
    return undefined;
  }
}

export async function listShops(db: Db, companyId: string): Promise<ShopRow[]> {
  return await db.select().from(shops).where(eq(shops.companyId, companyId)).orderBy(asc(shops.name), asc(shops.slug));
}

export async function getShop(db: Db, id: string): Promise<ShopRow | undefined> {
  return await one(db.select().from(shops).where(eq(shops.id, id)));
}

export async function shopSlugTaken(db: Db, companyId: string, slug: string): Promise<boolean> {
  return (await one(db.select({ id: shops.id }).from(shops).where(and(eq(shops.companyId, companyId), eq(shops.slug, slug))))) !== undefined;
}

/** The derived slug, or it with -2, -3... (cut so it still fits) when the company already has it. */
export async function freeShopSlug(db: Db, companyId: string, base: string, max: number): Promise<string> {
  if (!(await shopSlugTaken(db, companyId, base))) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = base.slice(0, max - suffix.length).replace(/-+$/, '') + suffix;
    if (!(await shopSlugTaken(db, companyId, candidate))) return candidate;
  }
}

/** Shops per company (for the admin's company list). */
export async function shopCounts(db: Db): Promise<Map<string, number>> {
  const rows = await db.select({ companyId: shops.companyId, n: count() }).from(shops).groupBy(shops.companyId);
  return new Map(rows.map((r) => [r.companyId, r.n]));
}

/** Opens a shop with its broker login. Call inside a transaction; a taken slug is 409 conflict. */
export async function createShop(
  db: Db,
  input: { companyId: string; companySlug: string; name: string; slug: string; timezone: string; sealedSecret: string },
): Promise<ShopRow> {
  if (await shopSlugTaken(db, input.companyId, input.slug)) throw conflict(`Your company already has a shop with the slug "${input.slug}".`);
  return await returned(db
    .insert(shops)
    .values({
      id: randomUUID(),
      companyId: input.companyId,
      slug: input.slug,
      name: input.name,
      timezone: input.timezone,
      createdAt: new Date().toISOString(),
      brokerUsername: brokerUsername(input.companySlug, input.slug),
      brokerSecret: input.sealedSecret,
    })
    .returning());
}

export async function companySlugOf(db: Db, companyId: string): Promise<string> {
  const row = await one(db.select({ slug: companies.slug }).from(companies).where(eq(companies.id, companyId)));
  if (!row) throw new Error(`company ${companyId} not found`);
  return row.slug;
}

/**
 * Why a shop cannot be removed, as sentences; empty when it can. The spec allows removing only an empty shop:
 * no cameras (tombstones do not count) and no visits.
 */
export async function shopBlockers(db: Db, shopId: string): Promise<string[]> {
  const reasons: string[] = [];
  const n = (await one(db
    .select({ n: count() })
    .from(cameras)
    .where(and(eq(cameras.shopId, shopId), isNull(cameras.deletedAt)))))!.n;
  if (n > 0) reasons.push(`it has ${n} camera${n === 1 ? '' : 's'} (remove them first)`);
  const v = await shopVisitCount(db, shopId);
  if (v > 0) reasons.push(`it has visit history (${v} visit${v === 1 ? '' : 's'}), which is kept`);
  const x = (await one(db.select({ n: count() }).from(crossings).where(eq(crossings.shopId, shopId))))!.n;
  if (x > 0) reasons.push(`it has entry and exit history (${x} crossing${x === 1 ? '' : 's'}), which is kept`);
  return reasons;
}

/** Changes a shop's settings; returns the updated row. */
export async function updateShop(db: Db, shopId: string, changes: Partial<Pick<ShopRow, 'name' | 'openingHours' | 'region' | 'occupancyLimit'>>): Promise<ShopRow> {
  if (Object.keys(changes).length === 0) return (await getShop(db, shopId))!;
  return (await returned(db.update(shops).set(changes).where(eq(shops.id, shopId)).returning()))!;
}

/** The company's regions, by name. */
export async function listRegions(db: Db, companyId: string): Promise<string[]> {
  const rows = await db.selectDistinct({ region: shops.region }).from(shops).where(eq(shops.companyId, companyId));
  return rows.map((r) => r.region).filter((r): r is string => r !== null).sort((a, b) => a.localeCompare(b));
}

export async function deleteShop(db: Db, shopId: string): Promise<void> {
  await db.delete(shops).where(eq(shops.id, shopId));
}

// ---------------------------------------------------------------------------------------------------------------
// Enrolment codes

/** Four groups of six upper-case letters and digits (~124 bits), from the CSPRNG without modulo bias. */
export function generateEnrolmentCode(): string {
  const groups: string[] = [];
  for (let g = 0; g < 4; g++) {
    let group = '';
    for (let i = 0; i < 6; i++) group += ENROLMENT_CODE_ALPHABET[randomInt(ENROLMENT_CODE_ALPHABET.length)];
    groups.push(group);
  }
  return groups.join('-');
}

/** Stores a new code (only its HMAC). Call inside a transaction. */
export async function createEnrolmentCode(
  db: Db,
  keys: Keys,
  input: { shop: ShopRow; label: string; days: number; requestedBy: string; requestedByEmail: string },
): Promise<{ code: string; row: EnrolmentCodeRow }> {
  const code = generateEnrolmentCode();
  const now = Date.now();
  const row = await returned(db
    .insert(enrolmentCodes)
    .values({
      id: randomUUID(),
      companyId: input.shop.companyId,
      shopId: input.shop.id,
      codeHash: keys.codeHash(normaliseEnrolmentCode(code)),
      label: input.label,
      requestedBy: input.requestedBy,
      requestedByEmail: input.requestedByEmail,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + input.days * 86_400_000).toISOString(),
    })
    .returning());
  return { code, row };
}

/**
 * Spends a code: the live (unused, unexpired) code row and its shop, or undefined for unknown, expired and spent
 * codes alike. Call inside a transaction; the code is marked used there.
 */
export async function spendEnrolmentCode(db: Db, keys: Keys, presented: string): Promise<{ code: EnrolmentCodeRow; shop: ShopRow } | undefined> {
  const normal = normaliseEnrolmentCode(presented);
  if (!/^[A-Z0-9]{24}$/.test(normal)) return undefined;
  const row = await one(db
    .select({ code: enrolmentCodes, shop: shops })
    .from(enrolmentCodes)
    .innerJoin(shops, eq(shops.id, enrolmentCodes.shopId))
    .where(eq(enrolmentCodes.codeHash, keys.codeHash(normal))));
  const now = new Date().toISOString();
  if (!row || row.code.usedAt || row.code.expiresAt <= now) return undefined;
  await db.update(enrolmentCodes).set({ usedAt: now }).where(eq(enrolmentCodes.id, row.code.id));
  return row;
}

// ---------------------------------------------------------------------------------------------------------------
// Liveness

/** Online: a heartbeat arrived within the last three intervals (three missed heartbeats make it offline). */
export function isOnline(shop: Pick<ShopRow, 'lastHeartbeatAt' | 'offlineSince'>, config: Config, now = Date.now()): boolean {
  if (!shop.lastHeartbeatAt) return false;
  // A goodbye or last will after the last heartbeat: offline at once, not three heartbeats later.
  if (shop.offlineSince && shop.offlineSince >= shop.lastHeartbeatAt) return false;
  return now - Date.parse(shop.lastHeartbeatAt) <= 3 * config.FOOTFALL_HEARTBEAT_INTERVAL_S * 1000;
}
