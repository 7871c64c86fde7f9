import { createHmac } from 'node:crypto';
import { Rng } from './random.js';
import { DIM, unitCopy } from './vector.js';

/**
 * Do-not-enrol markers: after a customer is erased, the same face must not be enrolled again as a new person,
 * and no identifying template may be kept. A marker is a 256-bit sketch of the erased template: the signs of its
 * projections on 256 secret random directions (derived from a per-company key), nothing else: no customer id, no
 * photo, no visit, an expiry. A would-be new customer whose sketch is within `maxDistance` bits of a live marker
 * is counted as footfall and not enrolled. Why this design, what it blocks and what it costs (and why a few bits,
 * or a hash, cannot work): docs/identity.md.
 */
export interface DoNotEnrolOptions {
  /** Bits whose Hamming distance to the marker is at most this block enrolment (default 100 of 256). */
  maxDistance?: number;
  /** How long a marker lives (default 180 days). */
  ttlMs?: number;
}

export interface DoNotEnrolMarker {
  /** 32 bytes: 256 sign bits. */
  sketch: Uint8Array;
  /** Epoch milliseconds after which the marker no longer blocks and is deleted. */
  expiresAt: number;
}

export const SKETCH_BITS = 256;
export const SKETCH_BYTES = SKETCH_BITS / 8;
export const DEFAULT_DO_NOT_ENROL = { maxDistance: 100, ttlMs: 180 * 24 * 3600 * 1000 } as const;

export class DoNotEnrolList {
  private readonly projection: Float32Array;
  private readonly maxDistance: number;
  private readonly ttlMs: number;
  private markers: DoNotEnrolMarker[] = [];

  /**
   * @param key secret of at least 16 bytes, one per company (e.g. HKDF of the server key with the company id), so
   * a marker means nothing without the server key and markers of two companies cannot be linked.
   */
  constructor(key: Uint8Array, options: DoNotEnrolOptions = {}) {
    if (key.length < 16) throw new Error('do-not-enrol: the key needs at least 16 bytes');
    const seed = createHmac('sha256', key).update('footfall:do-not-enrol:projection:v1').digest();
    this.projection = new Rng(seed).gaussian(new Float32Array(SKETCH_BITS * DIM));
    this.maxDistance = options.maxDistance ?? DEFAULT_DO_NOT_ENROL.maxDistance;
    this.ttlMs = options.ttlMs ?? DEFAULT_DO_NOT_ENROL.ttlMs;
  }

  get size(): number {
    return this.markers.length;
  }

  /** The 256-bit sketch of an embedding or template. */
  sketch(embedding: ArrayLike<number>): Uint8Array {
    const e = unitCopy(embedding);
    const p = this.projection;
    const out = new Uint8Array(SKETCH_BYTES);
    for (let b = 0; b < SKETCH_BITS; b++) {
      let s = 0;
      const o = b * DIM;
      for (let i = 0; i < DIM; i++) s += p[o + i]! * e[i]!;
      if (s > 0) out[b >> 3]! |= 1 << (b & 7);
    }
    return out;
  }

  /** Adds the marker of an erased customer's template; returns it for the caller to store. */
  mark(template: ArrayLike<number>, now: number): DoNotEnrolMarker {
    const marker = { sketch: this.sketch(template), expiresAt: now + this.ttlMs };
    this.markers.push(marker);
    return marker;
  }

  /** Adds stored markers (on start). Expired ones are skipped. */
  load(markers: Iterable<DoNotEnrolMarker>, now: number): void {
    for (const m of markers) {
      if (m.sketch.length !== SKETCH_BYTES) throw new RangeError(`a do-not-enrol sketch has ${SKETCH_BYTES} bytes`);
      if (m.expiresAt > now) this.markers.push({ sketch: Uint8Array.from(m.sketch), expiresAt: m.expiresAt });
    }
  }

  /** Replaces every marker with these (another process erased someone: the stored list is read again). */
  reset(markers: Iterable<DoNotEnrolMarker>, now: number): void {
    this.markers.length = 0;
    this.load(markers, now);
  }

  /** True if the face should not be enrolled (a live marker is within `maxDistance` bits). */
  blocks(embedding: ArrayLike<number>, now: number): boolean {
    this.prune(now);
    if (this.markers.length === 0) return false;
    const s = this.sketch(embedding);
    return this.markers.some((m) => hamming(s, m.sketch) <= this.maxDistance);
  }

  /** Drops expired markers; returns how many (the caller deletes them from the database too). */
  prune(now: number): number {
    const before = this.markers.length;
    if (this.markers.some((m) => m.expiresAt <= now)) this.markers = this.markers.filter((m) => m.expiresAt > now);
    return before - this.markers.length;
  }
}

export function hamming(a: Uint8Array, b: Uint8Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) {
    let x = a[i]! ^ b[i]!;
    x -= (x >> 1) & 0x55;
    x = (x & 0x33) + ((x >> 2) & 0x33);
    d += (x + (x >> 4)) & 0x0f;
  }
  return d;
}
