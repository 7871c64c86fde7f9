/**
 * Face detection post-processing for UltraFace-style outputs (`scores`
 * [1,N,2] softmaxed [background, face], `boxes` [1,N,4] corners normalised to
 * 0..1 of the stretched input, hence of the frame): score threshold, top-k,
 * greedy NMS, boxes back in frame pixels.
 */
import type { Box } from './types.js';

export interface Detection {
  box: Box;
  score: number;
}

export interface DetectOptions {
  /** Minimum face score; the reference code uses 0.65. */
  scoreThreshold: number;
  /** Overlap above which the weaker of two boxes is dropped. */
  nmsIou: number;
  /** Candidates considered before NMS, best first. */
  topK: number;
  /** Boxes whose shorter side is below this (frame pixels) are ignored. */
  minSize: number;
}

export const DEFAULT_DETECT_OPTIONS: DetectOptions = { scoreThreshold: 0.7, nmsIou: 0.4, topK: 750, minSize: 8 };

export function iou(a: Box, b: Box): number {
  const ix = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1);
  const iy = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
  if (ix <= 0 || iy <= 0) return 0;
  const inter = ix * iy;
  const union = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return union > 0 ? inter / union : 0;
}

/** Greedy non-maximum suppression; returns the kept detections, best score first. */
export function nms(dets: Detection[], iouThreshold: number): Detection[] {
  const sorted = [...dets].sort((a, b) => b.score - a.score);
  const kept: Detection[] = [];
  for (const d of sorted) {
    if (kept.every((k) => iou(k.box, d.box) <= iouThreshold)) kept.push(d);
  }
  return kept;
}

/**
 * Turn the detector's raw outputs into frame-pixel boxes. `scores` and `boxes`
 * are the flat output tensors; `frameWidth`/`frameHeight` the size of the frame
 * that was stretched into the input (coordinates are fractions of it).
 */
export function decodeDetections(
  scores: Float32Array,
  boxes: Float32Array,
  frameWidth: number,
  frameHeight: number,
  opts: DetectOptions = DEFAULT_DETECT_OPTIONS,
): Detection[] {
  const n = Math.min(scores.length / 2, boxes.length / 4);
  const candidates: Detection[] = [];
  for (let i = 0; i < n; i++) {
    const score = scores[2 * i + 1]!;
    if (score <= opts.scoreThreshold) continue;
    const x1 = Math.max(0, boxes[4 * i]! * frameWidth);
    const y1 = Math.max(0, boxes[4 * i + 1]! * frameHeight);
    const x2 = Math.min(frameWidth, boxes[4 * i + 2]! * frameWidth);
    const y2 = Math.min(frameHeight, boxes[4 * i + 3]! * frameHeight);
    if (x2 - x1 < opts.minSize || y2 - y1 < opts.minSize) continue;
    candidates.push({ box: { x1, y1, x2, y2 }, score });
  }
  candidates.sort((a, b) => b.score - a.score);
  if (candidates.length > opts.topK) candidates.length = opts.topK;
  return nms(candidates, opts.nmsIou);
}
