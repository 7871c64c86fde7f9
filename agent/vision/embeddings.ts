/** Combining a pass's face embeddings into one (agent/vision/pipeline.ts). */
import { l2normalize } from './analyzer.js';

/** Dot product of two L2-normalised vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * The embeddings that agree with the most central one (the one with the
 * highest summed similarity to the others) at cosine >= minCosine.
 */
export function consensus(embeddings: Float32Array[], minCosine: number): Float32Array[] {
  if (embeddings.length <= 2) return embeddings.length === 2 && dot(embeddings[0]!, embeddings[1]!) < minCosine ? [embeddings[0]!] : embeddings;
  let anchor = 0;
  let bestSum = -Infinity;
  for (let i = 0; i < embeddings.length; i++) {
    let s = 0;
    for (let j = 0; j < embeddings.length; j++) if (j !== i) s += dot(embeddings[i]!, embeddings[j]!);
    if (s > bestSum) {
      bestSum = s;
      anchor = i;
    }
  }
  const a = embeddings[anchor]!;
  return embeddings.filter((e) => e === a || dot(a, e) >= minCosine);
}

/** L2-normalised mean of L2-normalised embeddings. */
export function averageEmbeddings(embeddings: Float32Array[]): Float32Array {
  const sum = new Float32Array(embeddings[0]!.length);
  for (const e of embeddings) for (let i = 0; i < sum.length; i++) sum[i]! += e[i]!;
  return l2normalize(sum);
}
