/**
 * The frame pipeline's settings and statistics (agent/vision/pipeline.ts): what can be tuned, the defaults, and the
 * counters each camera keeps.
 */
import { DEFAULT_TRACKER } from './tracker.js';
import type { TrackerConfig } from './tracker.js';

export interface PipelineConfig {
  tracker: TrackerConfig;
  /** Faces embedded per track (the best ones that passed the gate). */
  embedPerTrack: number;
  /** Minimum time between two embedded faces of a track, so they are not near-identical frames. */
  embedSpacingMs: number;
  /**
   * Embeddings of one track that disagree with the most central one by more than
   * this (cosine below it) are left out of the average: the tracker followed
   * someone else for a while (people crossing).
   */
  embedConsensus: number;
  /** A track still present after this long is reported then (once), and not again when it ends. */
  capMs: number;
  /** Tracks seen in fewer frames are dropped as noise (no visit). */
  minFrames: number;
  /** Attributes are computed when the best face's quality is at least this (may be below the gate). */
  attributesMinQuality: number;
  /** Attach the best face as a JPEG to each visit. */
  faceImages: boolean;
  /** Window of fraction_below_gate. */
  gateWindowMs: number;
  /** A camera that sends no frame for this long (wall clock) has its tracks ended. */
  idleMs: number;
  /** Linking broken tracks of one person into one pass (docs/recognition.md, "Passes"). */
  link: LinkConfig;
}

/**
 * A person who turns away, is hidden for a moment or blurs below the gate loses their track; when a face resumes
 * within `windowMs` of the pass's last sighting it continues that pass (one visit) if it is where the pass was last
 * seen (position and time), or else if its face looks like the pass's last face (a short-term embedding, made even
 * of faces under the quality gate: it only links tracks of one camera a few seconds apart, and never creates or
 * matches a customer). windowMs 0 turns linking off (one visit per track).
 */
export interface LinkConfig {
  /** Longest gap between a pass's last sighting and a new track that may continue it. */
  windowMs: number;
  /** Position: centre distance at most this many face sizes (sqrt of box area) from where the pass was last seen. */
  maxDistance: number;
  /** Position: face size ratio within [1/maxSizeRatio, maxSizeRatio]. */
  maxSizeRatio: number;
  /** Face: cosine of the short-term embeddings at or above which a new track elsewhere continues the pass. */
  minCosine: number;
  /** A position link is undone when both faces passed the gate and their cosine is below this (two people). */
  vetoCosine: number;
}

export const DEFAULT_LINK: LinkConfig = { windowMs: 3000, maxDistance: 1.5, maxSizeRatio: 1.6, minCosine: 0.45, vetoCosine: 0.45 };

export const DEFAULT_PIPELINE: PipelineConfig = {
  tracker: DEFAULT_TRACKER,
  embedPerTrack: 3,
  embedSpacingMs: 400,
  embedConsensus: 0.3,
  capMs: 30_000,
  minFrames: 2,
  attributesMinQuality: 0.3,
  faceImages: true,
  gateWindowMs: 3_600_000,
  idleMs: 5_000,
  link: DEFAULT_LINK,
};

export interface PipelineConfigInput extends Partial<Omit<PipelineConfig, 'tracker' | 'link'>> {
  tracker?: Partial<TrackerConfig>;
  link?: Partial<LinkConfig>;
}

export interface CameraStats {
  frames_received: number;
  frames_processed: number;
  /** Frames skipped because analysis was behind. */
  frames_dropped: number;
  /** Faces analysed (one per face per processed frame). */
  faces: number;
  /** Share of faces below the quality gate in the rolling window; null when none was seen. */
  fraction_below_gate: number | null;
  tracks_active: number;
  visits: number;
  visits_with_identity: number;
  /** Tracks dropped as noise (fewer than minFrames). */
  tracks_discarded: number;
  embeddings: number;
  /** Tracks that continued an earlier pass (no visit of their own): by position and time, by the short-term embedding. */
  links_position: number;
  links_face: number;
  /** Position links undone because the two faces were clearly two people. */
  links_vetoed: number;
  /** Short-term embeddings made for linking (not for identity). */
  link_embeddings: number;
  /** Closing sightings of identified passes reported at the cap (not visits: head office extends the stay). */
  closing_sightings: number;
}

export interface PipelineStats extends Omit<CameraStats, 'fraction_below_gate'> {
  /** Worst camera's fraction_below_gate (what the shop shows); null when no camera saw a face in the window. */
  fraction_below_gate: number | null;
  worst_camera_id?: string;
  cameras: Record<string, CameraStats>;
}

/** The counters summed over cameras in PipelineStats. */
const SUMMED_STATS = [
  'frames_received',
  'frames_processed',
  'frames_dropped',
  'faces',
  'tracks_active',
  'visits',
  'visits_with_identity',
  'tracks_discarded',
  'embeddings',
  'links_position',
  'links_face',
  'links_vetoed',
  'link_embeddings',
  'closing_sightings',
] as const;

/** A camera's counters at start. */
export function emptyCameraStats(): Omit<CameraStats, 'fraction_below_gate' | 'tracks_active'> {
  return {
    frames_received: 0,
    frames_processed: 0,
    frames_dropped: 0,
    faces: 0,
    visits: 0,
    visits_with_identity: 0,
    tracks_discarded: 0,
    embeddings: 0,
    links_position: 0,
    links_face: 0,
    links_vetoed: 0,
    link_embeddings: 0,
    closing_sightings: 0,
  };
}

/** Every camera's counters and their sum; the worst camera's fraction_below_gate is the shop's. */
export function totalStats(cameras: Record<string, CameraStats>): PipelineStats {
  const total: PipelineStats = { ...emptyCameraStats(), tracks_active: 0, fraction_below_gate: null, cameras };
  for (const [id, c] of Object.entries(cameras)) {
    for (const k of SUMMED_STATS) total[k] += c[k];
    if (c.fraction_below_gate !== null && (total.fraction_below_gate === null || c.fraction_below_gate > total.fraction_below_gate)) {
      total.fraction_below_gate = c.fraction_below_gate;
      total.worst_camera_id = id;
    }
  }
  return total;
}
