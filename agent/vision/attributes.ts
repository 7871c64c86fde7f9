/**
 * Decoding the attribute models: SSR-Net (age, gender) and the 7-class
 * expression models. See docs/recognition.md for the derivation.
 */
import type { Outputs } from './models.js';
import type { EmotionModelId, GenderModel } from './types.js';

/** FER-2013 class order, which fits both expression models' answers (docs/models.md). */
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

/** Score bounds for sending a gender: `female` at or below `femaleAtMost`, `male` at or above `maleAtLeast`; a side left out is never sent. */
export interface GenderRule {
  femaleAtMost?: number;
  maleAtLeast?: number;
}

/**
 * How sure a model must be before the shop PC sends its answer: a wrong attribute is worse than none.
 * - gender: measured on held-out real photos (FairFace, `npm run bench -- attributes-real`, docs/recognition.md),
 *   SSR-Net's gender score barely separates women from men (AUC 0.68; the median woman scores 0.65, "male"): no
 *   bound sends "male" >= 97 % right, and only the very lowest scores are reliably women. The bounds were chosen on
 *   the tuning half (odd-numbered photos) and hold on the other half: "female" at <= 0.05, "male" never. Gender is
 *   therefore almost always withheld with SSR-Net, which is now only the fallback (the registry photos, on which
 *   the old 0.4 / 0.6 band was tuned, are all young women in good light and did not show this);
 * - genderFaceres: the HSE FaceRes sigmoid (1 = male; agent/vision/description.ts), AUC 0.90 held out. Chosen on the
 *   tuning half: the bounds sending the most faces with >= 99 % right there (a margin over the 97 % goal). Held out:
 *   30 % of faces given a gender, 97.5 % right ("female" 33 of 34, "male" 45 of 46);
 * - emotions (fr_expression.onnx, the fallback): only the classes the model got right most of the time, each above
 *   its own probability: "happy" and "neutral". The model calls many neutral faces "happy", and every "sad" and
 *   "fear" it gave was wrong (a broad smile "fear", stern or lowered faces "sad"), so those and the classes never
 *   seen right are not sent;
 * - emotionsMini (the mini-Xception model, agent/vision/emotion.ts): on the same labelled faces its top class
 *   "happy" was right 17 of 18 times and "neutral" 8 of 9, "sad" and "angry" never (0 of 2 each): those two classes
 *   only, when the model gives the top class at least half the probability (26 of the 31 faces sent, 92 % right,
 *   against 27 at 78 % for fr_expression; docs/recognition.md, "Attributes");
 * - age: the model gives no confidence; sent as it is (docs/recognition.md has its error on the held-out photos).
 */
export const ATTRIBUTE_CONFIDENCE: {
  gender: GenderRule;
  genderFaceres: GenderRule;
  emotions: Readonly<Record<string, number>>;
  emotionsMini: Readonly<Record<string, number>>;
} = {
  gender: { femaleAtMost: 0.05 },
  genderFaceres: { femaleAtMost: 0.2, maleAtLeast: 0.93 },
  emotions: { happy: 0.9, neutral: 0.6 },
  emotionsMini: { happy: 0.5, neutral: 0.5 },
};

/** The expression rule of the model that gave the probabilities (the mini model when installed, else fr_expression). */
export function emotionRuleFor(model: EmotionModelId | undefined): Readonly<Record<string, number>> {
  return model === 'emotion-mini' ? ATTRIBUTE_CONFIDENCE.emotionsMini : ATTRIBUTE_CONFIDENCE.emotions;
}

/** The gender rule of the model that gave the score (FaceRes when installed, else SSR-Net). */
export function genderRuleFor(model: GenderModel | undefined): GenderRule {
  return model === 'faceres' ? ATTRIBUTE_CONFIDENCE.genderFaceres : ATTRIBUTE_CONFIDENCE.gender;
}

/** A symmetric band about 0.5 (`margin` 0: the plain 0.5 cut), for the benchmarks' tables. */
export function genderBand(margin: number): GenderRule {
  return margin === 0 ? { femaleAtMost: 0.5 - 1e-9, maleAtLeast: 0.5 } : { femaleAtMost: 0.5 - margin, maleAtLeast: 0.5 + margin };
}

/**
 * SSR-Net's gender models are trained with 1 = male, 0 = female (its demo prints 'M' for >= 0.5). Outside the
 * rule's bounds the model is guessing: no gender.
 */
export function genderFromScore(score: number, rule: GenderRule = ATTRIBUTE_CONFIDENCE.gender): 'male' | 'female' | undefined {
  if (rule.maleAtLeast !== undefined && score >= rule.maleAtLeast) return 'male';
  if (rule.femaleAtMost !== undefined && score <= rule.femaleAtMost) return 'female';
  return undefined;
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
