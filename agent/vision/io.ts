/**
 * Reading images into RgbImage and writing face JPEGs, with sharp.
 */
import sharp from 'sharp';
import type { Rect } from './image.js';
import type { RgbImage } from './types.js';

/** Decode an image file (JPEG, PNG, WebP...) to RGB, applying its EXIF orientation. */
export async function loadImage(path: string): Promise<RgbImage> {
  const { data, info } = await sharp(path).rotate().removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`${path}: expected 3 channels after decoding, got ${info.channels}`);
  return { width: info.width, height: info.height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
}

/** JPEG of a region of an RGB image (whole image when `rect` is absent). */
export async function encodeJpeg(img: RgbImage, rect?: Rect, quality = 85): Promise<Buffer> {
  let s = sharp(Buffer.from(img.data.buffer, img.data.byteOffset, img.width * img.height * 3), {
    raw: { width: img.width, height: img.height, channels: 3 },
  });
  if (rect) {
    const left = Math.max(0, Math.floor(rect.x));
    const top = Math.max(0, Math.floor(rect.y));
    const width = Math.max(1, Math.min(img.width - left, Math.round(rect.w)));
    const height = Math.max(1, Math.min(img.height - top, Math.round(rect.h)));
    s = s.extract({ left, top, width, height });
  }
  return s.jpeg({ quality }).toBuffer();
}

/** Encode raw RGB as PNG (tests and diagnostics). */
export async function encodePng(img: RgbImage): Promise<Buffer> {
  return sharp(Buffer.from(img.data.buffer, img.data.byteOffset, img.width * img.height * 3), {
    raw: { width: img.width, height: img.height, channels: 3 },
  })
    .png()
    .toBuffer();
}
