/**
 * The recognition pipeline of the shop-PC agent (docs/recognition.md).
 */
export { createVisionEngine, defaultWorkerCount } from './engine.js';
export type { EngineOptions, EngineStats, VisionEngine } from './engine.js';
export { DEFAULT_PIPELINE, FramePipeline } from './pipeline.js';
export type { CameraStats, FramePipelineEvents, FramePipelineOptions, PipelineConfig, PipelineConfigInput, PipelineStats } from './pipeline.js';
export { DEFAULT_MATCH_THRESHOLD, FaceAnalyzer, cosine } from './analyzer.js';
export type { AnalyzerConfig, AnalyzerConfigInput, FrameAnalysis, ObservedFace } from './analyzer.js';
export { DEFAULT_QUALITY } from './quality.js';
export type { QualityConfig } from './quality.js';
export { DEFAULT_TRACKER } from './tracker.js';
export type { TrackerConfig } from './tracker.js';
export type { Box, FaceAttributes, FaceObservation, FivePoints, Frame, Point, QualityParts, RgbImage, Visit } from './types.js';
