/** The FairFace photos' labels as the attribute benchmarks read them (bench/attributes-real.ts, attributes-models.ts). */

/** One photo's label: FairFace's annotators' gender and age group. */
export interface Truth {
  filename: string;
  age: string;
  gender: 'Male' | 'Female';
}

/** FairFace's age groups, in years (70+ up to 100). */
export const AGE_GROUPS: Record<string, [number, number]> = {
  '0-2': [0, 2],
  '3-9': [3, 9],
  '10-19': [10, 19],
  '20-29': [20, 29],
  '30-39': [30, 39],
  '40-49': [40, 49],
  '50-59': [50, 59],
  '60-69': [60, 69],
  '70+': [70, 100],
};

/** Area under the ROC curve of a gender score (1 = male): how often a man scores above a woman (ties half). */
export function genderAuc<T extends { truth: Truth }>(set: readonly T[], score: (m: T) => number): number {
  const men = set.filter((m) => m.truth.gender === 'Male').map(score);
  const women = set.filter((m) => m.truth.gender === 'Female').map(score);
  let s = 0;
  for (const a of men) for (const b of women) s += a > b ? 1 : a === b ? 0.5 : 0;
  return s / (men.length * women.length);
}
