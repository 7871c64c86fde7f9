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

/** A person detector: one RGB24 picture in, the people in it out. One call at a time per detector. */
export interface BodyDetector {
  /** Name and version of the model, for logs and the benchmark table. */
  readonly name: string;
  detect(image: RawImage): Promise<BodyBox[]>;
  close(): Promise<void>;
}

/** A body crossing a counting line, as the tracker reports it. */
export interface Crossing {
  direction: 'in' | 'out';
  /** When the crossing happened (the frame where the tracked point changed sides for good). */
  at: Date;
  trackId: string;
}
