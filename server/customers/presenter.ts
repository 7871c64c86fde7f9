import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import type { customers } from './schema.js';

export type CustomerRow = typeof customers.$inferSelect;

/** `V-<number>`. */
export function customerRef(number: number): string {
  return `V-${number}`;
}

/** The name, or `Visitor <number>` for an unnamed customer. */
export function customerLabel(number: number, fullName: string): string {
  return fullName.trim() !== '' ? fullName : `Visitor ${number}`;
}

/** The spec's Image object. Photos are served by this API: relative URL, `auth` true. */
export type ImageObject = { available: true; url: string; auth: true } | { available: false; reason: string };

export const IMAGES_OFF_REASON = 'Customer photos are switched off on this server.';

export function faceUrl(faceImageId: string): string {
  return `/api/faces/${faceImageId}`;
}

export function presentImage(config: Config, faceImageId: string | null | undefined, noneReason: string): ImageObject {
  if (config.FOOTFALL_IMAGES === 'off') return { available: false, reason: IMAGES_OFF_REASON };
  if (!faceImageId) return { available: false, reason: noneReason };
  return { available: true, url: faceUrl(faceImageId), auth: true };
}

/** The columns presentCustomer reads (the list selects only these). */
export type PresentedCustomer = Pick<CustomerRow, 'id' | 'number' | 'fullName' | 'phone' | 'email' | 'gender' | 'dateOfBirth' | 'notes' | 'consent' | 'visitCount' | 'firstSeenAt' | 'lastSeenAt' | 'staff'>;

export function hasProfile(c: PresentedCustomer): boolean {
  return [c.fullName, c.phone, c.email, c.gender, c.dateOfBirth, c.notes].some((v) => v.trim() !== '');
}

/** The spec's Customer. */
export function presentCustomer(c: PresentedCustomer) {
  return {
    id: c.id,
    ref: customerRef(c.number),
    label: customerLabel(c.number, c.fullName),
    full_name: c.fullName,
    phone: c.phone,
    email: c.email,
    visit_count: c.visitCount,
    first_seen_at: c.firstSeenAt,
    last_seen_at: c.lastSeenAt,
    has_profile: hasProfile(c),
    has_consent: c.consent,
    /** Additive (docs/visits-and-customers.md, "Staff"). */
    staff: c.staff,
  };
}

/** The stored profile (PUT /api/visitors/{id}/profile's write shape, as kept). */
/**
 * The profile's entity tag (GET /api/visitors/{id}, PUT .../profile): a hash of the profile as presented, so any
 * change to it (an edit, a merge filling it in) gives another tag. Strong: compared byte for byte with If-Match.
 */
export function profileTag(c: CustomerRow): string {
  return `"${createHash('sha256').update(JSON.stringify(presentProfile(c))).digest('base64url').slice(0, 22)}"`;
}

/** Whether an If-Match header matches `tag`: `*`, or one of its comma-separated strong tags (RFC 9110 13.1.1). */
export function ifMatchAllows(header: string, tag: string): boolean {
  return header.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v === tag;
  });
}

export function presentProfile(c: CustomerRow) {
  return {
    full_name: c.fullName,
    phone: c.phone,
    email: c.email,
    gender: c.gender,
    date_of_birth: c.dateOfBirth,
    notes: c.notes,
    consent: c.consent,
    consent_changed_at: c.consentChangedAt,
    updated_at: c.profileUpdatedAt,
  };
}
