import sharp from 'sharp';
import type { RawImage } from './ppm.js';

/** One decoded picture of a camera, RGB24. */
export interface Frame extends RawImage {
  /** The camera's `camera_id` (the engine name that lands on visits). */
  cameraId: string;
  /** When the agent received it. */
  at: Date;
}

/**
 * Whoever looks at the frames (recognition, a placement check). Called synchronously on the capture path, so heavy
 * work belongs elsewhere; a thrown error is logged and does not stop the camera. `data` is valid during the call:
 * capture fills the same few buffers again with later pictures (a new 0.7 MB buffer per picture kept V8's garbage
 * collector busy), so copy what you keep. Frames from `CameraWorker.latest()` and live-view listeners are stable.
 */
export type FrameConsumer = (frame: Frame) => void;

export interface JpegOptions {
  /** Output width in pixels, height keeps the aspect ratio. Default 640 (snapshots and live view). */
  width?: number;
  /** 1-100, default 80. */
  quality?: number;
}

/** A JPEG of a raw frame, `width` pixels wide: for snapshots, live view and check answers. */
export function toJpeg(image: RawImage, options: JpegOptions = {}): Promise<Buffer> {
  const { width = 640, quality = 80 } = options;
  const pipeline = sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } });
  return (image.width === width ? pipeline : pipeline.resize({ width })).jpeg({ quality }).toBuffer();
}
