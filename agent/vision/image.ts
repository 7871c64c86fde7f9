/**
 * Pixel operations of the pipeline in plain TypedArray code: resizing a frame
 * into a model tensor, affine warps (bilinear, supersampled when shrinking),
 * grey conversion and the variance of the Laplacian. They work on tiny images
 * (64x64, 112x112) or once per frame (640x360 -> 320x240), where plain code is
 * as fast as calling out to sharp or OpenCV (measurements in docs/decisions.md).
 */
export type { Affine, FrameRegion, Rect, TensorFormat } from './image-core.js';
export { rgbImage } from './image-core.js';
export * from './image-tensor.js';
export * from './image-warp.js';
export * from './image-crop.js';
export * from './image-measure.js';
