import sharp from 'sharp';
import type { RawImage } from '../capture/ppm.js';

// The agent's JPEGs are made from raw pictures in memory, never twice the same: libvips' operation cache (50 MB by
// default) would only hold memory.
sharp.cache(false);

export interface PictureOptions {
  /** At most this wide (never enlarged); default 640. */
  width?: number;
  /** 1-100; default 80. */
  quality?: number;
  /** Clockwise turn, for a camera mounted on its side (capture frames are already turned). */
  rotate?: 0 | 90 | 180 | 270;
}

/** A JPEG of a raw RGB24 picture. */
export async function pictureJpeg(image: RawImage, options: PictureOptions = {}): Promise<Buffer> {
  const { width = 640, quality = 80, rotate = 0 } = options;
  let raw = { data: image.data, width: image.width, height: image.height };
  if (rotate) {
    const turned = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
      .rotate(rotate)
      .raw()
      .toBuffer({ resolveWithObject: true });
    raw = { data: turned.data, width: turned.info.width, height: turned.info.height };
  }
  const pipeline = sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: 3 } });
  return (raw.width <= width ? pipeline : pipeline.resize({ width })).jpeg({ quality }).toBuffer();
}
