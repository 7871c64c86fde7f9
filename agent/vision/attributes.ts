/**
 * Decoding the attribute models: SSR-Net (age, gender) and the 7-class
 * expression model. See docs/recognition.md for the derivation.
 */
import type { Outputs } from './models.js';

/** FER-2013 class order, which fits the expression model's answers (docs/models.md). */
export const EMOTIONS = ['angry', 'disgust', 'fear', 'happy', 'sad', 'surprise', 'neutral'] as const;

function out(outputs: Outputs, name: string, length: number): Float32Array {
  const v = outputs[name];
  if (!v || v.length < length) throw new Error(`SSR-Net output "${name}" is missing or shorter than ${length}`);
  return v;
}

/**
 * SSR-Net soft stagewise regression (Yang et al., IJCAI 2018) with 3 stages of
 * 3 bins, lambda_local = lambda_d = 1, exactly as its Keras `SSR_module`:
 *
 *   stage k contributes  sum_i (i + eta_k[i]) * p_k[i]  /  prod_{j<=k} ( s_j * (1 + dk_j) )
 *   result = V * (stage1 + stage2 + stage3)
 *
 * where p_k = prob_stage_k (softmax over the bins), eta_k = index_offset_stagek
 * (shift of each bin centre, tanh-bounded), dk_k = stagek_delta_k (the dynamic
 * range scale, tanh-bounded) and s_j = 3. V = 101 gives years for the age
 * model; V = 1 gives a 0..1 score for the gender model.
 */
export function decodeSsrNet(outputs: Outputs, v: number): number {
  let result = 0;
  let denom = 1;
  for (const s of [1, 2, 3]) {
    const p = out(outputs, `prob_stage_${s}`, 3);
    const eta = out(outputs, `index_offset_stage${s}`, 3);
    const dk = out(outputs, `stage${s}_delta_k`, 1)[0]!;
    denom *= 3 * (1 + dk);
    let sum = 0;
    for (let i = 0; i < 3; i++) sum += (i + eta[i]!) * p[i]!;
    result += sum / denom;
  }
  return result * v;
}

/**
 * How sure a model must be before the shop PC sends its answer: a wrong attribute is worse than none. Measured by
 * `npm run bench -- attributes` on hand-labelled faces (docs/benchmarks.md, "Attribute accuracy"):
 * - gender: the SSR-Net score must be at least `genderMargin` away from 0.5 (97.6 % right, 87 % of faces get one);
 * - expression: only the classes the model got right most of the time, each above its own probability: "happy"
 *   and "neutral". The model calls many neutral faces "happy", and every "sad" and "fear" it gave was wrong
 *   (a broad smile "fear", stern or lowered faces "sad"), so those and the classes never seen right are not sent;
 * - age: the model gives no confidence; sent as it is (83 % within 10 years of the labelled range).
 */
export const ATTRIBUTE_CONFIDENCE: { genderMargin: number; emotions: Readonly<Record<string, number>> } = {
  genderMargin: 0.1,
  emotions: { happy: 0.9, neutral: 0.6 },
};

/**
 * SSR-Net's gender models are trained with 1 = male, 0 = female (its demo prints 'M' for >= 0.5); measured here:
 * men in ../shared/faces score 0.77..1.08 (one 0.44), the registry photos (women) 0.07..0.49 (one 0.67)
 * (docs/benchmarks.md). Within `margin` of 0.5 the model is guessing: no gender.
 */
export function genderFromScore(score: number, margin: number = ATTRIBUTE_CONFIDENCE.genderMargin): 'male' | 'female' | undefined {
  if (score >= 0.5 + margin) return 'male';
  if (score <= 0.5 - margin) return 'female';
  return margin === 0 ? (score >= 0.5 ? 'male' : 'female') : undefined;
}

/**
 * The expression whose probability is highest, if the measurement says that class can be trusted at that
 * probability (`minimums`: class -> least probability; classes not listed are never sent).
 */
export function emotionFromProbabilities(p: Record<string, number>, minimums: Readonly<Record<string, number>> = ATTRIBUTE_CONFIDENCE.emotions): string | undefined {
  let best: string | undefined;
  let bestP = -1;
  for (const [k, v] of Object.entries(p)) if (v > bestP) [best, bestP] = [k, v];
  const min = best === undefined ? undefined : minimums[best];
  return min !== undefined && bestP >= min ? best : undefined;
}

export function softmax(logits: ArrayLike<number>): number[] {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  const e: number[] = [];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    const x = Math.exp(logits[i]! - max);
    e.push(x);
    sum += x;
  }
  return e.map((x) => x / sum);
}

export function decodeExpression(logits: ArrayLike<number>): { emotion: string; probabilities: Record<string, number> } {
  const p = softmax(logits);
  let best = 0;
  for (let i = 1; i < p.length; i++) if (p[i]! > p[best]!) best = i;
  const probabilities: Record<string, number> = {};
  p.forEach((x, i) => (probabilities[EMOTIONS[i] ?? `class${i}`] = Math.round(x * 1000) / 1000));
  return { emotion: EMOTIONS[best] ?? `class${best}`, probabilities };
}
