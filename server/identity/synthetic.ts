import { Rng } from './random.js';
import { DIM } from './vector.js';

/**
 * Synthetic faces for tests and benchmarks. Identities are random unit vectors in 512-d (two different people
 * then have cosine ~0 +- 0.044, like real faces of different people); a sighting of a person is a unit vector at
 * a chosen cosine to the identity (real same-person pairs of `fr_feature` measured >= 0.47).
 */
export class Faces {
  readonly rng: Rng;
  private readonly noise = new Float32Array(DIM);

  constructor(seed = 1) {
    this.rng = new Rng(seed);
  }

  /** `n` random identities, row after row in one array (n x 512). */
  identities(n: number): Float32Array {
    const out = new Float32Array(n * DIM);
    this.rng.gaussian(out);
    for (let i = 0; i < n; i++) normalizeAt(out, i * DIM);
    return out;
  }

  /** One random identity. */
  identity(): Float32Array {
    return this.identities(1);
  }

  /** A sighting of `identity` (row `row` of a matrix) with cosine exactly `cos` to it. */
  sighting(identity: Float32Array, cos: number, row = 0): Float32Array {
    const o = row * DIM;
    const e = this.rng.gaussian(this.noise);
    let d = 0;
    for (let i = 0; i < DIM; i++) d += e[i]! * identity[o + i]!;
    for (let i = 0; i < DIM; i++) e[i]! -= d * identity[o + i]!;
    normalizeAt(e, 0);
    const s = Math.sqrt(1 - cos * cos);
    const out = new Float32Array(DIM);
    for (let i = 0; i < DIM; i++) out[i] = cos * identity[o + i]! + s * e[i]!;
    return out;
  }

  /** A sighting at a cosine drawn uniformly from [lo, hi]. */
  sightingIn(identity: Float32Array, lo: number, hi: number, row = 0): Float32Array {
    return this.sighting(identity, lo + (hi - lo) * this.rng.uniform(), row);
  }
}

function normalizeAt(v: Float32Array, o: number): void {
  let s = 0;
  for (let i = 0; i < DIM; i++) s += v[o + i]! * v[o + i]!;
  const k = 1 / Math.sqrt(s);
  for (let i = 0; i < DIM; i++) v[o + i]! *= k;
}
