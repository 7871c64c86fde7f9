import sharp from 'sharp';
import type { Ctx } from '../context.js';
import { HttpError, badRequest } from '../http/errors.js';

const tooLarge = (limit: number) => new HttpError(413, 'payload_too_large', `The picture is too large: at most ${Math.floor(limit / 1024)} KiB.`);

/**
 * Reads an `image/jpeg` request body (the JSON body parser leaves such bodies alone) up to `limit` bytes:
 * 415 for another content type, 413 beyond the limit, 400 when empty.
 */
export async function readJpegBody(ctx: Ctx, limit: number): Promise<Buffer> {
  if (!ctx.is('image/jpeg')) throw new HttpError(415, 'unsupported_media_type', 'Send the picture as the request body with Content-Type: image/jpeg.');
  const declared = Number(ctx.get('Content-Length') || NaN);
  if (declared > limit) {
    ctx.set('Connection', 'close');
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      over = true;
      // Keep draining (so the client reads our answer) but stop storing; give up on absurd bodies.
      if (size > 4 * limit) {
        ctx.set('Connection', 'close');
        break;
      }
      continue;
    }
    chunks.push(chunk);
  }
  if (over) throw tooLarge(limit);
  if (size === 0) throw badRequest('The body is empty: send one JPEG picture.');
  return Buffer.concat(chunks, size);
}

/** A cheap test for live frames: JPEG start-of-image marker. */
export function looksLikeJpeg(buf: Buffer): boolean {
  return buf.length > 4 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff;
}

/** Decodes the header with sharp: 400 unless it is a JPEG with a size. */
export async function checkJpeg(buf: Buffer): Promise<{ width: number; height: number }> {
  if (!looksLikeJpeg(buf)) throw badRequest('The body is not a JPEG picture.');
  try {
    const meta = await sharp(buf).metadata();
    if (meta.format !== 'jpeg' || !meta.width || !meta.height) throw new Error('not a jpeg');
    return { width: meta.width, height: meta.height };
  } catch {
    throw badRequest('The body is not a readable JPEG picture.');
  }
}
