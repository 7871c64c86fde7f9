import type { Shop } from './types.js';
import { IANA_NAMES } from './zones-data.js';

/**
 * Time zones and phone countries of the console. The company has no zone of its own: "the company's zone" is the
 * zone most of its shops are in (ties: the oldest shop's, which the API lists first), or, before it has any shop,
 * head office's default for a new shop (Asia/Kolkata, docs/shops-and-cameras.md). Every time the console shows
 * (customers, purchases, reports) is in that zone or the shop's own, and the page says which.
 */

export const DEFAULT_ZONE = 'Asia/Kolkata';

/** The console shows and sends the IANA name of a zone ICU lists under an old one (head office accepts both, stores the IANA one). */
export const modernZone = (z: string): string => IANA_NAMES[z] ?? z;

export function companyZone(shops: readonly Pick<Shop, 'timezone'>[]): string {
  if (shops.length === 0) return DEFAULT_ZONE;
  const count = new Map<string, number>();
  for (const s of shops) count.set(modernZone(s.timezone), (count.get(modernZone(s.timezone)) ?? 0) + 1);
  let best = modernZone(shops[0]!.timezone);
  for (const [z, n] of count) if (n > (count.get(best) ?? 0)) best = z;
  return best;
}

/** Every zone the browser knows, in their usual names, sorted; `must` (a shop's zone) is always in. */
export function zoneNames(...must: string[]): string[] {
  const listed = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set([...listed, ...must, 'UTC'].map(modernZone))].sort();
}

/** "26 Nov 2026, 14:05" in `zone` (day, month name, 24-hour clock: one format for every reader). */
export function formatIn(iso: string | null | undefined, zone: string, opts: { date?: boolean; time?: boolean } = {}): string {
  if (!iso) return '';
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return '';
  const { date = true, time = true } = opts;
  return new Intl.DateTimeFormat('en-GB', {
    timeZone: zone,
    ...(date ? { day: 'numeric', month: 'short', year: 'numeric' } : {}),
    ...(time ? { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' } : {}),
  } as Intl.DateTimeFormatOptions).format(t);
}

/** Country calling codes by zone, for numbers typed without one (the shop's or company's country). */
const CALLING: Record<string, string> = {
  'Asia/Kolkata': '91', 'Asia/Calcutta': '91', 'Asia/Dubai': '971', 'Asia/Karachi': '92', 'Asia/Dhaka': '880', 'Asia/Colombo': '94',
  'Asia/Kathmandu': '977', 'Asia/Singapore': '65', 'Asia/Kuala_Lumpur': '60', 'Asia/Jakarta': '62', 'Asia/Manila': '63',
  'Asia/Bangkok': '66', 'Asia/Ho_Chi_Minh': '84', 'Asia/Hong_Kong': '852', 'Asia/Shanghai': '86', 'Asia/Tokyo': '81',
  'Asia/Seoul': '82', 'Asia/Riyadh': '966', 'Asia/Qatar': '974', 'Asia/Kuwait': '965', 'Asia/Muscat': '968', 'Asia/Bahrain': '973',
  'Europe/London': '44', 'Europe/Dublin': '353', 'Europe/Paris': '33', 'Europe/Berlin': '49', 'Europe/Madrid': '34',
  'Europe/Rome': '39', 'Europe/Amsterdam': '31', 'Europe/Brussels': '32', 'Europe/Zurich': '41', 'Europe/Vienna': '43',
  'Europe/Stockholm': '46', 'Europe/Oslo': '47', 'Europe/Copenhagen': '45', 'Europe/Warsaw': '48', 'Europe/Lisbon': '351',
  'Europe/Istanbul': '90', 'Africa/Nairobi': '254', 'Africa/Lagos': '234', 'Africa/Johannesburg': '27', 'Africa/Cairo': '20',
  'Australia/Sydney': '61', 'Australia/Melbourne': '61', 'Australia/Perth': '61', 'Australia/Brisbane': '61', 'Pacific/Auckland': '64',
  'America/Sao_Paulo': '55', 'America/Mexico_City': '52', 'America/Bogota': '57', 'America/Argentina/Buenos_Aires': '54',
};

export function callingCode(zone: string): string | undefined {
  return CALLING[zone] ?? (/^America\/(New_York|Chicago|Denver|Los_Angeles|Phoenix|Anchorage|Detroit|Toronto|Vancouver|Edmonton|Winnipeg|Halifax)$/.test(zone) || zone === 'Pacific/Honolulu' ? '1' : undefined);
}

/**
 * A phone number as typed, made international for head office (which keeps E.164): one with + or 00 stays as it
 * is; a local one ("98765 43210", "07700 900123") gets the zone's country code, its trunk 0 dropped.
 */
export function internationalPhone(typed: string, zone: string): string {
  const t = typed.trim();
  if (t === '' || /^(\+|00)/.test(t)) return t;
  const code = callingCode(zone);
  if (!code) return t;
  const digits = t.replace(/[\s().-]/g, '');
  const national = digits.replace(/^0+/, '');
  // Too short to be a phone number anywhere: left as typed, for head office to refuse with its message.
  if (!/^\d+$/.test(digits) || national.length < 6) return t;
  return `+${code}${national}`;
}

/** "India (+91)"-style words for a hint: the code only (country names would need a table of their own). */
export function phoneHint(zone: string): string {
  const code = callingCode(zone);
  return code ? `A local number is taken as +${code} (the ${zone} time zone's country); else start with + and the country code.` : 'With the country code: +91 98765 43210.';
}
