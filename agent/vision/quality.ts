/**
 * Face quality: a 0..1 score from face size, sharpness, pose and detector
 * score, and the gate that decides whether a face may be used to identify
 * someone. How the constants were chosen: docs/recognition.md.
 */
import { estimatePose } from './align.js';
import { laplacianBounds, rgbLaplacianVariance } from './image.js';
import type { PixelWindow, Rect } from './image.js';
import type { FivePoints, QualityParts, RgbImage } from './types.js';

export interface QualityConfig {
  /** Faces with quality below this never create or match identities. */
  gate: number;
  /** Eye distance (frame px) at or below which the size score is 0; it rises linearly to 1 at goodEyeDistance. */
  minEyeDistance: number;
  goodEyeDistance: number;
  /**
   * Laplacian variance (aligned 112x112 grey, inner face) at or below which the
   * sharpness score is 0; it rises with log(variance) to 1 at sharpVariance.
   */
  blurredVariance: number;
  sharpVariance: number;
  /** |yaw| in degrees at which the pose score reaches 0 (it falls as 1 - (yaw/maxYaw)^2). */
  maxYaw: number;
  /** |roll| in degrees at which the pose score reaches 0. */
  maxRoll: number;
  /** Detector score that maps to 0; it rises linearly to 1 at goodDetectorScore. */
  minDetectorScore: number;
  goodDetectorScore: number;
}

/**
 * Calibrated on ../shared/faces and the registry photos, each face shrunk and
 * blurred step by step and compared with its own full-quality embedding
 * (docs/recognition.md): the gate sits where that similarity drops to ~0.7.
 */
export const DEFAULT_QUALITY: QualityConfig = {
  gate: 0.5,
  minEyeDistance: 8,
  goodEyeDistance: 24,
  blurredVariance: 10,
  sharpVariance: 150,
  maxYaw: 60,
  maxRoll: 60,
  minDetectorScore: 0.5,
  goodDetectorScore: 0.9,
};

/** Weights of the geometric mean: any part at 0 makes the quality 0. */
export const QUALITY_WEIGHTS = { size: 0.25, sharpness: 0.4, pose: 0.25, detector: 0.1 };

/** Inner face of the aligned 112x112 crop (brows to chin, cheek to cheek), where sharpness is measured. */
export const SHARPNESS_ROI = { x: 24, y: 36, w: 64, h: 68 };

/** SHARPNESS_ROI in an aligned crop of `size` pixels. */
function sharpnessRoi(size: number): Rect {
  const k = size / 112;
  return { x: SHARPNESS_ROI.x * k, y: SHARPNESS_ROI.y * k, w: SHARPNESS_ROI.w * k, h: SHARPNESS_ROI.h * k };
}

/**
 * The pixels of a `size`x`size` aligned crop that qualityOf reads (the ROI and the one-pixel ring of its
 * Laplacian, as rgbLaplacianVariance takes them): the analysis warps only these for each face, and the whole crop
 * only for the faces it embeds.
 */
export function sharpnessWindow(size = 112): PixelWindow {
  const { x0, y0, x1, y1 } = laplacianBounds(size, size, sharpnessRoi(size));
  return { u0: x0 - 1, v0: y0 - 1, u1: x1 + 1, v1: y1 + 1 };
}

function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

export function qualityOf(
  landmarks: FivePoints,
  aligned: RgbImage,
  detectorScore: number,
  cfg: QualityConfig = DEFAULT_QUALITY,
): { quality: number; parts: QualityParts } {
  const { yaw, roll, eyeDistance } = estimatePose(landmarks);
  const lv = rgbLaplacianVariance(aligned, sharpnessRoi(aligned.width));
  const size = clamp01((eyeDistance - cfg.minEyeDistance) / (cfg.goodEyeDistance - cfg.minEyeDistance));
  const sharpness = lv <= 0 ? 0 : clamp01(Math.log(lv / cfg.blurredVariance) / Math.log(cfg.sharpVariance / cfg.blurredVariance));
  const pose = clamp01(1 - (yaw / cfg.maxYaw) ** 2) * clamp01(1 - (roll / cfg.maxRoll) ** 2);
  const detector = clamp01((detectorScore - cfg.minDetectorScore) / (cfg.goodDetectorScore - cfg.minDetectorScore));
  const w = QUALITY_WEIGHTS;
  const quality = size ** w.size * sharpness ** w.sharpness * pose ** w.pose * detector ** w.detector;
  return {
    quality: Math.round(quality * 1000) / 1000,
    parts: { eyeDistance, size, laplacianVariance: lv, sharpness, yaw, roll, pose, detector },
  };
}

/**
 * Share of faces below the gate per camera over a rolling window, kept in
 * fixed time buckets so memory stays bounded however many faces are seen.
 */
export class GateWindow {
  private readonly buckets: { start: number; seen: number; below: number }[] = [];

  constructor(
    readonly windowMs = 3_600_000,
    readonly bucketMs = 60_000,
  ) {}

  add(at: number, below: boolean): void {
    const start = Math.floor(at / this.bucketMs) * this.bucketMs;
    let last = this.buckets[this.buckets.length - 1];
    if (!last || last.start < start) {
      last = { start, seen: 0, below: 0 };
      this.buckets.push(last);
    }
    // A frame older than the newest bucket (clock step back) is counted in the newest.
    last.seen++;
    if (below) last.below++;
    this.prune(at);
  }

  private prune(now: number): void {
    while (this.buckets.length > 0 && this.buckets[0]!.start + this.bucketMs <= now - this.windowMs) this.buckets.shift();
  }

  /** Faces seen and below the gate within the window ending at `now`. */
  counts(now: number): { seen: number; below: number } {
    this.prune(now);
    let seen = 0;
    let below = 0;
    for (const b of this.buckets) {
      seen += b.seen;
      below += b.below;
    }
    return { seen, below };
  }

  /** null when no face was seen in the window. */
  fraction(now: number): number | null {
    const { seen, below } = this.counts(now);
    return seen === 0 ? null : below / seen;
  }
}
