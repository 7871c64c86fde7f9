/**
 * Passes: one person's pass in front of one camera, made of one or more face tracks linked together (docs/recognition.md,
 * "Passes"). The data a pass and its tracks keep, and the bookkeeping on it that needs no model: starting a pass,
 * folding a track's faces into it, merging two passes. The linking decisions and the visits are the pipeline's.
 */
import type { ContextRegions } from './analyzer.js';
import type { FrameRegion } from './image.js';
import type { CameraStats, PipelineConfig } from './pipeline-config.js';
import type { GateWindow } from './quality.js';
import type { FaceTracker, Track } from './tracker.js';
import type { Box, FivePoints, RgbImage, Visit } from './types.js';

/** A face a track keeps: its crop region cut out of the frame, from which the embedding, attributes and JPEG are made. */
export interface FaceKeep {
  at: number;
  quality: number;
  passed: boolean;
  region: FrameRegion;
  regions: ContextRegions;
  landmarks: FivePoints;
  box: Box;
  /** Its embedding, once made (for a link check or a visit; undefined when the call failed): made once per face. */
  embedding?: Promise<Float32Array | undefined>;
}

/** What a track (or a pass, all its tracks together) keeps for its visit. */
export interface Keep {
  best?: FaceKeep;
  candidates: FaceKeep[];
  facesPassed: number;
  frames: number;
}

export interface TrackState extends Keep {
  /** The pass this track belongs to (set when the track starts). */
  pass?: Pass;
  /** Folded into its pass (the track ended): its faces are the pass's now. */
  absorbed: boolean;
  /** Passes it may continue, to be decided by the short-term embedding (new track not linked by position). */
  linkCandidates?: Pass[];
  /** Linked by position, to be confirmed by the faces (veto). */
  linkedFrom?: FaceKeep;
  /** Linked by position and not yet confirmed: a visit reported meanwhile leaves it out. */
  unconfirmed?: boolean;
  linkChecked: boolean;
}

/** What a visit is made of: a pass as it was when reported. */
export interface PassSnapshot {
  id: string;
  firstAt: number;
  lastAt: number;
  frames: number;
  facesPassed: number;
  links: number;
  segments: Pass['segments'];
}

/** One person's pass in front of one camera: one or more tracks linked together; one visit. */
export interface Pass extends Keep {
  id: string;
  tracks: Track<TrackState>[];
  firstAt: number;
  lastAt: number;
  lastBox: Box;
  /** The best face of its most recently seen track (the face a resuming track is compared with). */
  lastFace?: FaceKeep;
  /** A visit went out (at the time cap): later tracks add nothing. */
  reported: boolean;
  /** Over: emitted when it ended, or merged into another pass. */
  ended: boolean;
  /** The visit reported at the cap, once made. */
  capVisit?: Visit;
  /** Link checks under way that may add a track to this pass: it is not ended meanwhile. */
  pending: number;
  /** Where each of its tracks was first seen (diagnostics and the counting benchmark). */
  segments: { first_seen_at: number; last_seen_at: number; box: Box; link?: 'position' | 'face' }[];
}

export interface CameraState {
  id: string;
  tracker: FaceTracker<TrackState>;
  /** Passes not yet ended, oldest first. */
  passes: Pass[];
  gate: GateWindow;
  busy: boolean;
  pending?: { img: RgbImage; at: number };
  /** Frame buffers back from analysis, reused for the next frames (no 0.7 MB allocation per frame). */
  pool: Uint8Array[];
  lastFrameAt: number;
  lastArrival: number;
  stats: Omit<CameraStats, 'fraction_below_gate' | 'tracks_active'>;
}

/** A new pass made of one track. */
export function newPass(cam: CameraState, track: Track<TrackState>, at: number): Pass {
  const pass: Pass = {
    id: track.id,
    tracks: [track],
    firstAt: at,
    lastAt: at,
    lastBox: track.box,
    reported: false,
    ended: false,
    pending: 0,
    candidates: [],
    facesPassed: 0,
    frames: 0,
    segments: [{ first_seen_at: at, last_seen_at: at, box: track.box }],
  };
  track.data.pass = pass;
  cam.passes.push(pass);
  return pass;
}

/** The best face of the pass's most recently seen track. */
export function recentFace(pass: Pass): FaceKeep | undefined {
  let recent: Track<TrackState> | undefined;
  for (const t of pass.tracks) if (!t.data.absorbed && t.data.best && (!recent || t.lastAt > recent.lastAt)) recent = t;
  return recent && (!pass.lastFace || recent.lastAt >= pass.lastFace.at) ? recent.data.best : pass.lastFace;
}

type KeepConfig = Pick<PipelineConfig, 'embedSpacingMs' | 'embedPerTrack'>;

/** Offer a gated face to a list of the best few, spaced in time. */
export function offer(cfg: KeepConfig, c: FaceKeep[], k: FaceKeep | undefined, quality = k?.quality ?? 0, at = k?.at ?? 0, make: () => FaceKeep = () => k!): void {
  const near = c.find((x) => Math.abs(x.at - at) < cfg.embedSpacingMs);
  if (near) {
    if (quality > near.quality) c[c.indexOf(near)] = make();
  } else if (c.length < cfg.embedPerTrack) {
    c.push(make());
  } else {
    let worst = 0;
    for (let i = 1; i < c.length; i++) if (c[i]!.quality < c[worst]!.quality) worst = i;
    if (quality > c[worst]!.quality) c[worst] = make();
  }
}

/** Add what `from` kept to `into`: the best face, the best gated faces (spaced in time), counts. */
export function fold(cfg: KeepConfig, into: Keep, from: Keep): void {
  into.frames += from.frames;
  into.facesPassed += from.facesPassed;
  if (from.best && (!into.best || from.best.quality > into.best.quality)) into.best = from.best;
  for (const k of from.candidates) offer(cfg, into.candidates, k);
  from.candidates = [];
  from.best = undefined;
}

/** A track ended: its faces become its pass's. */
export function absorb(cfg: KeepConfig, track: Track<TrackState>): void {
  const s = track.data;
  if (s.absorbed) return;
  s.absorbed = true;
  // Ended before its faces could be compared (too short): its position link stands.
  s.unconfirmed = false;
  const pass = s.pass;
  if (!pass) return;
  if (s.best && (!pass.lastFace || track.lastAt >= pass.lastAt - 1)) pass.lastFace = s.best;
  if (pass.reported) {
    s.candidates = [];
    s.best = undefined;
    return;
  }
  fold(cfg, pass, s);
}

/** Pass `from` (a new track, maybe with tracks linked to it since) continues pass `into`. */
export function mergePasses(cfg: KeepConfig, cam: CameraState, from: Pass, into: Pass): void {
  for (const t of from.tracks) {
    t.data.pass = into;
    into.tracks.push(t);
  }
  into.segments.push(...from.segments.map((g, i) => (i === 0 ? { ...g, link: 'face' as const } : g)));
  into.firstAt = Math.min(into.firstAt, from.firstAt);
  if (from.lastAt >= into.lastAt) {
    into.lastAt = from.lastAt;
    into.lastBox = from.lastBox;
    into.lastFace = from.lastFace ?? into.lastFace;
  }
  if (!into.reported) fold(cfg, into, from);
  from.tracks = [];
  from.ended = true;
  cam.passes.splice(cam.passes.indexOf(from), 1);
  cam.stats.links_face++;
}

/**
 * The lost pass a new track continues by position and time: the nearest in reach, when unambiguous (the only one,
 * or clearly nearer than the next). Face sizes are the square root of the box area.
 */
export function positionLink(link: PipelineConfig['link'], lost: Pass[], box: Box): Pass | undefined {
  const size = (b: Box) => Math.sqrt(Math.max(1, (b.x2 - b.x1) * (b.y2 - b.y1)));
  const near = lost
    .map((p) => {
      const ratio = size(box) / size(p.lastBox);
      const d = Math.hypot((box.x1 + box.x2 - p.lastBox.x1 - p.lastBox.x2) / 2, (box.y1 + box.y2 - p.lastBox.y1 - p.lastBox.y2) / 2) / size(p.lastBox);
      return { p, d, ok: d <= link.maxDistance && ratio <= link.maxSizeRatio && ratio >= 1 / link.maxSizeRatio };
    })
    .filter((x) => x.ok)
    .sort((a, b) => a.d - b.d);
  return near.length === 1 || (near.length > 1 && near[0]!.d < 0.5 * near[1]!.d) ? near[0]!.p : undefined;
}

/** A pass's segments as they go on the wire (ISO times). */
export function wireSegments(segments: Pass['segments']): NonNullable<Visit['pass']>['segments'] {
  return segments.map((g) => ({ first_seen_at: new Date(g.first_seen_at).toISOString(), last_seen_at: new Date(g.last_seen_at).toISOString(), box: g.box, ...(g.link ? { link: g.link } : {}) }));
}
