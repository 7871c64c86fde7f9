import { DIM } from './vector.js';

/** A customer's template and how many good embeddings it averages (stored next to the template BLOB). */
export interface TemplateState {
  template: Float32Array;
  count: number;
}

/**
 * The running mean of good embeddings, re-normalised: (w * template + embedding) / |...| with w = min(count, cap).
 * Up to `cap` samples this is the plain mean direction; after that the old template's weight stays at `cap`, so
 * the template is an exponential moving average with factor 1/(cap+1) and follows a face as it ages (a new
 * hairstyle, glasses, years) instead of freezing on the first visits. Both inputs must be unit vectors.
 */
export function runningMean(current: TemplateState, embedding: Float32Array, cap: number): TemplateState {
  const w = Math.max(0, Math.min(current.count, cap));
  const t = current.template;
  const out = new Float32Array(DIM);
  let s = 0;
  for (let i = 0; i < DIM; i++) {
    const x = w * t[i]! + embedding[i]!;
    out[i] = x;
    s += x * x;
  }
  const k = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < DIM; i++) out[i]! *= k;
  return { template: out, count: current.count + 1 };
}

/** Template of two customers merged into one: their running means weighted by their (capped) counts. */
export function mergedTemplate(a: TemplateState, b: TemplateState, cap: number): TemplateState {
  const wa = Math.max(1, Math.min(a.count, cap));
  const wb = Math.max(1, Math.min(b.count, cap));
  const out = new Float32Array(DIM);
  let s = 0;
  for (let i = 0; i < DIM; i++) {
    const x = wa * a.template[i]! + wb * b.template[i]!;
    out[i] = x;
    s += x * x;
  }
  const k = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < DIM; i++) out[i]! *= k;
  return { template: out, count: a.count + b.count };
}
