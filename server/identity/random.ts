/**
 * Small deterministic random source (sfc32) with a fast Gaussian sampler. Used for the fixed rotation of the
 * search codes, the keyed projection of do-not-enrol markers, and synthetic faces in tests and benchmarks.
 * Not a cryptographic generator: secrecy, where it matters, comes from the seed (see `erasure.ts`).
 */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number | Uint8Array) {
    if (typeof seed === 'number') {
      this.a = seed >>> 0;
      this.b = 0x9e3779b9;
      this.c = 0x243f6a88;
      this.d = 0xb7e15162;
    } else {
      if (seed.length < 16) throw new Error('Rng: a byte seed needs at least 16 bytes');
      const v = new DataView(seed.buffer, seed.byteOffset, seed.byteLength);
      this.a = v.getUint32(0, true);
      this.b = v.getUint32(4, true);
      this.c = v.getUint32(8, true);
      this.d = v.getUint32(12, true);
    }
    for (let i = 0; i < 16; i++) this.u32();
  }

  /** Uniform 32-bit unsigned integer. */
  u32(): number {
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.u32() / 4294967296;
  }

  /** Fills `out` with standard normal samples (16-bit quantile table: fast, tails cut at about 4.3 sigma). */
  gaussian(out: Float32Array): Float32Array {
    const table = quantiles();
    const n = out.length;
    let i = 0;
    for (; i + 1 < n; i += 2) {
      const r = this.u32();
      out[i] = table[r & 0xffff]!;
      out[i + 1] = table[r >>> 16]!;
    }
    if (i < n) out[i] = table[this.u32() & 0xffff]!;
    return out;
  }
}

let table: Float32Array | undefined;

function quantiles(): Float32Array {
  if (table) return table;
  table = new Float32Array(65536);
  for (let i = 0; i < 65536; i++) table[i] = inverseNormal((i + 0.5) / 65536);
  return table;
}

/** Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9). */
function inverseNormal(p: number): number {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const lo = 0.02425;
  const poly = (k: number[], x: number) => k.reduce((acc, v) => acc * x + v, 0);
  if (p < lo) {
    const q = Math.sqrt(-2 * Math.log(p));
    return poly(c, q) / (poly(d, q) * q + 1);
  }
  if (p > 1 - lo) return -inverseNormal(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (poly(a, r) * q) / (poly(b, r) * r + 1);
}
