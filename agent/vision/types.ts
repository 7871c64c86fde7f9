/**
 * Types shared by the recognition pipeline (agent/vision). Plain data only, so
 * every value here can cross a worker_threads boundary by structured clone.
 */
import type { FrameRegion, Rect } from './image.js';

/** An 8-bit RGB image, rows top to bottom, 3 bytes per pixel, no padding. */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Which model gave a gender score (their scores differ: each has its own rule, agent/vision/attributes.ts). */
export type GenderModel = 'faceres' | 'ssr-net';

/** Which model gave the expression probabilities (each has its own rule, agent/vision/attributes.ts). */
export type EmotionModelId = 'emotion-mini' | 'fr-expression';

/** A frame as the capture worker (agent/capture) emits it: RGB24, one per decoded picture. */
export interface Frame {
  cameraId: string;
  width: number;
  height: number;
  /** RGB24, width*height*3 bytes. The pipeline copies what it keeps; the caller may reuse the buffer. */
  data: Buffer;
  at: Date;
}

export type Point = readonly [number, number];

/** Axis-aligned box in frame pixels, corners. */
export interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The five alignment points: left eye, right eye, nose tip, left mouth corner, right mouth corner (image left/right). */
export type FivePoints = readonly [Point, Point, Point, Point, Point];

export interface QualityParts {
  /** Face size in frame pixels: the distance between the eye centres. */
  eyeDistance: number;
  /** 0..1 from eyeDistance. */
  size: number;
  /** Variance of the Laplacian on the aligned grey 112x112 crop (inner face region). */
  laplacianVariance: number;
  /** 0..1 from laplacianVariance. */
  sharpness: number;
  /** Estimated yaw in degrees (positive: nose towards image right). */
  yaw: number;
  /** Roll in degrees (angle of the eye line). */
  roll: number;
  /** 0..1 from yaw and roll. */
  pose: number;
  /** 0..1 from the detector score. */
  detector: number;
}

/** One face found in one frame (or photo): where it is, how good it is, and the frame region its later work needs. */
export interface FaceFound {
  box: Box;
  /** Detector face score 0..1. */
  score: number;
  landmarks: FivePoints;
  /** Overall quality 0..1 (see quality.ts). */
  quality: number;
  qualityParts: QualityParts;
  passesGate: boolean;
  /**
   * The frame region (whole pixels, inside the frame) that holds the attribute models' crops, the face image and
   * every pixel the aligned 112x112 crop is made from. A track cuts it out of the frames whose faces it keeps, and
   * the embedding, attributes and face JPEG are made from that cut-out later, without the whole frame.
   */
  crop: Rect;
}

/** A face with its pixels: the aligned crop and the context region (the CLI, tests, and photos). */
export interface FaceObservation extends FaceFound {
  /** The face warped onto the 112x112 ArcFace template, RGB: the embedding model's input. */
  aligned: RgbImage;
  /** `crop` cut out of the frame (the region and where it sits in the frame). */
  context: FrameRegion;
}

export interface FaceAttributes {
  /** 'male' | 'female', from the FaceRes (else SSR-Net) gender score, only when sure (docs/recognition.md); a visit averages the score over its best faces. */
  gender?: string;
  /** Years, SSR-Net age, rounded to one decimal; a visit averages it over its best faces. */
  age?: number;
  /** FER-2013 class with the highest probability, on the visit's best face, only when sure (emotionRuleFor). */
  emotion?: string;
  /** Raw values for diagnostics. */
  raw?: { genderScore?: number; genderModel?: GenderModel; age?: number; emotionProbabilities?: Record<string, number>; emotionModel?: EmotionModelId };
}

/** One person passing one camera. */
export interface Visit {
  /** uuid v4, made here; stable for the life of the visit. */
  visit_id: string;
  /** When the person was first seen (ISO 8601 UTC, from frame times). */
  occurred_at: string;
  camera_id: string;
  /** L2-normalised mean of the embeddings of the track's best faces; absent when no face passed the gate. */
  embedding?: Float32Array;
  /** Model set that made the embedding (manifest `set`), present with an embedding. */
  recognition_model?: string;
  /** Best face quality seen on the track, 0..1. */
  quality: number;
  /** Whether at least one face of the track passed the quality gate (then `embedding` is present, unless embedding failed). */
  passed_gate: boolean;
  /** From the best face, when it was good enough for attributes. */
  attributes?: FaceAttributes;
  /** JPEG of the best face (box grown 1.5x), for the optional face-image upload. */
  face_jpeg?: Buffer;
  track: {
    id: string;
    first_seen_at: string;
    last_seen_at: string;
    /** Frames in which the track had a face. */
    frames: number;
    /** Faces on the track that passed the gate. */
    faces_passed: number;
    /** Faces embedded for `embedding`. */
    faces_embedded: number;
    /** Why the visit was emitted: the track ended, reached the time cap, or the pipeline was flushed. */
    ended_by: 'lost' | 'cap' | 'flush';
  };
  /**
   * The tracks linked into this pass (a person who turned away or was hidden for a moment): how many, and where
   * and when each was seen. Shop-PC only (diagnostics, the counting benchmark); not sent.
   */
  pass?: {
    tracks: number;
    segments: { first_seen_at: string; last_seen_at: string; box: Box; link?: 'position' | 'face' }[];
    /**
     * Set on the closing sighting of an identified pass reported at the cap: the cap visit's id. It carries the
     * same embedding and spans the whole pass, so head office extends that stay (no arrival); not a visit to count.
     */
    closes?: string;
  };
}
