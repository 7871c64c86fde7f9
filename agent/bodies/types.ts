/**
 * Body counting at the door (issue 20, docs/body-counting.md): the seams between the person detector, the body
 * tracker with its counting line, and the runtime that publishes crossings.
 */
import type { RawImage } from '../capture/ppm.js';

/** One person found in a picture, in 0..1 frame coordinates (x, y: top-left corner). */
export interface BodyBox {
  x: number;
  y: number;
  w: number;
  h: number;
  /** Detector confidence 0..1. */
  score: number;
}

/**
 * What the caller knows about a picture: `maxScale`, the most it needs enlarging (people are already large enough);
 * a detector whose input takes the picture's shape (MoveNet, `shape` fit) then uses fewer input pixels. Others ignore it.
 */
export interface DetectHint {
  maxScale?: number;
}

/** A person detector: one RGB24 picture in, the people in it out. One call at a time per detector. */
export interface BodyDetector {
  /** Name and version of the model, for logs and the benchmark table. */
  readonly name: string;
  detect(image: RawImage, hint?: DetectHint): Promise<BodyBox[]>;
  close(): Promise<void>;
}

/** A body crossing a counting line, as the tracker reports it. */
export interface Crossing {
  direction: 'in' | 'out';
  /** When the crossing happened (the frame where the tracked point changed sides for good). */
  at: Date;
  trackId: string;
}
