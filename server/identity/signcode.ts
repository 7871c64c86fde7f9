import { Rng } from './random.js';
import { DIM } from './vector.js';

if (DIM !== 512) throw new Error('signcode: the transform is written for 512 dimensions');

/** A search code: one sign bit per dimension after a fixed random rotation (512 bits). */
export const CODE_BYTES = DIM / 8;

const SEED = 0x5eed_f00d;

/**
 * Sign-bit codes for the prefilter. For random hyperplanes, two vectors at angle t differ in a bit with probability
 * t/pi (SimHash), so the Hamming distance ranks by angle. The rotation (random signs, then a Walsh-Hadamard
 * transform: an orthogonal map up to scale, O(d log d)) makes that hold whatever the model's coordinate basis is:
 * each bit becomes the sign of a random +-1 combination of all 512 coordinates. The rotation is fixed: codes
 * are derived data, never stored, so it may change between versions.
 */
export class SignCoder {
  private readonly flip = new Float32Array(DIM);
  private readonly buf = new Float32Array(DIM);

  constructor(seed = SEED) {
    const rng = new Rng(seed);
    for (let i = 0; i < DIM; i++) this.flip[i] = rng.u32() & 1 ? 1 : -1;
  }

  /** Writes the code of `v[vo .. vo+512)` to `out[oo .. oo+64)`. */
  encode(v: Float32Array, vo: number, out: Uint8Array, oo: number): void {
    const a = this.buf;
    const flip = this.flip;
    for (let i = 0; i < DIM; i++) a[i] = v[vo + i]! * flip[i]!;
    // Walsh-Hadamard transform, two stages per pass (radix 4: 1+2, 4+8, 16+32, 64+128), then the last stage (256).
    for (let h = 1; h < 256; h <<= 2) {
      for (let i = 0; i < DIM; i += h << 2) {
        for (let j = i; j < i + h; j++) {
          const x0 = a[j]!;
          const x1 = a[j + h]!;
          const x2 = a[j + 2 * h]!;
          const x3 = a[j + 3 * h]!;
          const s01 = x0 + x1;
          const d01 = x0 - x1;
          const s23 = x2 + x3;
          const d23 = x2 - x3;
          a[j] = s01 + s23;
          a[j + h] = d01 + d23;
          a[j + 2 * h] = s01 - s23;
          a[j + 3 * h] = d01 - d23;
        }
      }
    }
    for (let j = 0; j < 256; j++) {
      const x = a[j]!;
      const y = a[j + 256]!;
      a[j] = x + y;
      a[j + 256] = x - y;
    }
    for (let b = 0; b < CODE_BYTES; b++) {
      const o = b << 3;
      out[oo + b] =
        (a[o]! > 0 ? 1 : 0) |
        (a[o + 1]! > 0 ? 2 : 0) |
        (a[o + 2]! > 0 ? 4 : 0) |
        (a[o + 3]! > 0 ? 8 : 0) |
        (a[o + 4]! > 0 ? 16 : 0) |
        (a[o + 5]! > 0 ? 32 : 0) |
        (a[o + 6]! > 0 ? 64 : 0) |
        (a[o + 7]! > 0 ? 128 : 0);
    }
  }
}
