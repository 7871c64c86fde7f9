/** Face embeddings and templates: 512 float32, L2-normalised, so that a dot product is the cosine similarity. */
export const DIM = 512;

/** Bytes of a template BLOB: 512 little-endian float32. */
export const TEMPLATE_BYTES = DIM * 4;

/** A copy of `v`, checked (length, finite, non-zero) and L2-normalised. */
export function unitCopy(v: ArrayLike<number>): Float32Array {
  return normalizeInto(v, new Float32Array(DIM));
}

/** Writes `v`, checked (length, finite, non-zero) and L2-normalised, to `out[o .. o+512)`; returns `out`. */
export function normalizeInto(v: ArrayLike<number>, out: Float32Array, o = 0): Float32Array {
  if (v.length !== DIM) throw new RangeError(`an embedding has ${DIM} values, got ${v.length}`);
  let s = 0;
  for (let i = 0; i < DIM; i++) {
    const x = v[i]!;
    if (!Number.isFinite(x)) throw new RangeError('an embedding holds a non-finite value');
    s += x * x;
  }
  if (s === 0) throw new RangeError('an embedding is all zeros');
  const k = 1 / Math.sqrt(s);
  for (let i = 0; i < DIM; i++) out[o + i] = v[i]! * k;
  return out;
}

/**
 * Dot product of `a` and `b[bo .. bo+512)`, accumulated in float64. Eight partial sums: the loop's additions no
 * longer wait on each other, which measured about 3x faster than one running sum (the gallery's re-rank and the
 * matcher's burst list are most of ingest's matching; docs/decisions.md, "Ingest CPU per visit").
 */
export function dot(a: Float32Array, b: Float32Array, bo = 0): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let s4 = 0;
  let s5 = 0;
  let s6 = 0;
  let s7 = 0;
  for (let i = 0; i < DIM; i += 8) {
    const j = bo + i;
    s0 += a[i]! * b[j]!;
    s1 += a[i + 1]! * b[j + 1]!;
    s2 += a[i + 2]! * b[j + 2]!;
    s3 += a[i + 3]! * b[j + 3]!;
    s4 += a[i + 4]! * b[j + 4]!;
    s5 += a[i + 5]! * b[j + 5]!;
    s6 += a[i + 6]! * b[j + 6]!;
    s7 += a[i + 7]! * b[j + 7]!;
  }
  return s0 + s1 + (s2 + s3) + (s4 + s5 + (s6 + s7));
}

/**
 * Template from a stored BLOB of little-endian float32 (x64 and arm64 are little-endian). better-sqlite3 gives a
 * Buffer that may not be 4-byte aligned, so this copies.
 */
export function templateFromBlob(blob: Uint8Array): Float32Array {
  if (blob.byteLength !== TEMPLATE_BYTES) throw new RangeError(`a template BLOB has ${TEMPLATE_BYTES} bytes, got ${blob.byteLength}`);
  const out = new Float32Array(DIM);
  new Uint8Array(out.buffer).set(blob);
  return out;
}

/** Like `templateFromBlob`, but a view without a copy when the BLOB is 4-byte aligned (read it before reusing). */
export function templateView(blob: Uint8Array): Float32Array {
  if (blob.byteLength === TEMPLATE_BYTES && blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, DIM);
  return templateFromBlob(blob);
}

/** BLOB to store for a template (a Buffer over a copy). */
export function templateToBlob(t: Float32Array): Buffer {
  if (t.length !== DIM) throw new RangeError(`a template has ${DIM} values, got ${t.length}`);
  return Buffer.from(new Uint8Array(t.buffer, t.byteOffset, t.byteLength));
}
