/**
 * Face alignment geometry: the five points from the 68 landmarks, the
 * least-squares similarity transform (Umeyama) onto the ArcFace template, and
 * a pose estimate (yaw, roll) from the same points.
 */
import type { Affine } from './image.js';
import type { FivePoints, Point } from './types.js';

/** The standard 112x112 ArcFace template (insightface), the order of FivePoints. */
export const ARCFACE_112: FivePoints = [
  [38.2946, 51.6963],
  [73.5318, 51.5014],
  [56.0252, 71.7366],
  [41.5493, 92.3655],
  [70.7299, 92.2041],
];

function mean(points: Float32Array | readonly number[], indices: readonly number[]): Point {
  let x = 0;
  let y = 0;
  for (const i of indices) {
    x += points[2 * i]!;
    y += points[2 * i + 1]!;
  }
  return [x / indices.length, y / indices.length];
}

/**
 * The five alignment points from 68 iBUG landmarks given as [x0, y0, x1, y1, ...]
 * (0-based indices): eye centres = mean of the four eyelid points of each eye
 * (37,38,40,41 and 43,44,46,47), nose tip = 30, mouth corners = mean of the outer
 * and inner lip corner (48,60 and 54,64). "Left" is image left.
 */
export function fivePointsFrom68(points: Float32Array | readonly number[]): FivePoints {
  if (points.length < 136) throw new Error(`expected 68 points (136 values), got ${points.length} values`);
  return [
    mean(points, [37, 38, 40, 41]),
    mean(points, [43, 44, 46, 47]),
    [points[60]!, points[61]!],
    mean(points, [48, 60]),
    mean(points, [54, 64]),
  ];
}

/**
 * Least-squares similarity transform (rotation, uniform scale, translation; no
 * reflection) mapping `from` onto `to`: the 2-D case of Umeyama (1991), which
 * has the closed form a = sum(x*u + y*v)/sum(x^2 + y^2), b = sum(x*v - y*u)/sum(x^2 + y^2)
 * on centred points, M = [a -b tx; b a ty].
 */
export function similarityTransform(from: readonly Point[], to: readonly Point[]): Affine {
  const n = from.length;
  if (n < 2 || to.length !== n) throw new Error('similarityTransform needs two equal lists of at least 2 points');
  let fx = 0;
  let fy = 0;
  let tx = 0;
  let ty = 0;
  for (let i = 0; i < n; i++) {
    fx += from[i]![0];
    fy += from[i]![1];
    tx += to[i]![0];
    ty += to[i]![1];
  }
  fx /= n;
  fy /= n;
  tx /= n;
  ty /= n;
  let num1 = 0;
  let num2 = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    const x = from[i]![0] - fx;
    const y = from[i]![1] - fy;
    const u = to[i]![0] - tx;
    const v = to[i]![1] - ty;
    num1 += x * u + y * v;
    num2 += x * v - y * u;
    den += x * x + y * y;
  }
  if (den === 0) throw new Error('similarityTransform: the source points coincide');
  const a = num1 / den;
  const b = num2 / den;
  return [a, -b, tx - (a * fx - b * fy), b, a, ty - (b * fx + a * fy)];
}

export function applyAffine(m: Affine, p: Point): Point {
  return [m[0] * p[0] + m[1] * p[1] + m[2], m[3] * p[0] + m[4] * p[1] + m[5]];
}

export function invertAffine(m: Affine): Affine {
  const [a, b, c, d, e, f] = m;
  const det = a * e - b * d;
  if (det === 0) throw new Error('invertAffine: singular matrix');
  const ia = e / det;
  const ib = -b / det;
  const id = -d / det;
  const ie = a / det;
  return [ia, ib, -(ia * c + ib * f), id, ie, -(id * c + ie * f)];
}

/** Scale factor of a similarity transform. */
export function affineScale(m: Affine): number {
  return Math.sqrt(Math.abs(m[0] * m[4] - m[1] * m[3]));
}

/**
 * The similarity mapping a face's five points (frame pixels) onto the template
 * of an `size`x`size` aligned crop (the ArcFace 112 template scaled), and its inverse
 * (aligned crop -> frame), which is what a warp needs.
 */
export function alignmentTransform(
  points: FivePoints,
  template: readonly Point[] = ARCFACE_112,
  size = 112,
): { toAligned: Affine; toFrame: Affine } {
  const k = size / 112;
  const dst = k === 1 ? template : template.map(([x, y]) => [x * k, y * k] as const);
  const toAligned = similarityTransform(points, dst);
  return { toAligned, toFrame: invertAffine(toAligned) };
}

export interface PoseEstimate {
  /** Degrees; 0 frontal, positive when the nose tip is right of the eye midpoint in the image. */
  yaw: number;
  /** Degrees; angle of the line from the left to the right eye centre. */
  roll: number;
  /** Distance between the eye centres in pixels. */
  eyeDistance: number;
}

/**
 * Yaw and roll from the five points. Roll is the eye line's angle. For yaw,
 * the nose tip sits about half an eye distance in front of the eye plane, so
 * turning the head by yaw moves it sideways by ~(d/2)*sin(yaw) while the eye
 * half-distance shrinks to (d/2)*cos(yaw): yaw ~ atan(offset / half eye distance),
 * with the offset measured along the eye line from the eye midpoint.
 * Landmark models pull the points towards a frontal shape on strong profiles,
 * so beyond ~60 degrees this underestimates; the quality score only needs the order.
 */
export function estimatePose(points: FivePoints): PoseEstimate {
  const [le, re, nose] = points;
  const dx = re[0] - le[0];
  const dy = re[1] - le[1];
  const eyeDistance = Math.hypot(dx, dy);
  const roll = (Math.atan2(dy, dx) * 180) / Math.PI;
  if (eyeDistance === 0) return { yaw: 90, roll, eyeDistance };
  const ux = dx / eyeDistance;
  const uy = dy / eyeDistance;
  const mx = (le[0] + re[0]) / 2;
  const my = (le[1] + re[1]) / 2;
  const offset = (nose[0] - mx) * ux + (nose[1] - my) * uy;
  const yaw = (Math.atan(offset / (eyeDistance / 2)) * 180) / Math.PI;
  return { yaw, roll, eyeDistance };
}
