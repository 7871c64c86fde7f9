/**
 * Splits ffmpeg's `-f image2pipe -c:v ppm` output into frames. Each PPM (P6) image is a short text header
 * (`P6\n<width> <height>\n255\n`) followed by exactly width x height x 3 bytes of RGB24: raw frames that carry
 * their own size, so nothing has to be guessed from ffmpeg's messages and a camera that changes resolution
 * mid-stream is read correctly.
 */

export interface RawImage {
  width: number;
  height: number;
  /** RGB24, row by row, width x height x 3 bytes. */
  data: Buffer;
}

/** Largest header we accept before deciding the stream is not PPM (the real one is ~15 bytes). */
const MAX_HEADER = 64;
/** 8K UHD is the largest picture we expect from a camera. */
const MAX_SIDE = 8192;

export class PpmReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Payload size of the image being read, once its header is parsed. */
  private current: { width: number; height: number; headerLength: number } | undefined;

  constructor(private readonly onImage: (image: RawImage) => void) {}

  /** Feeds bytes from the pipe; calls onImage for every complete image. Throws on a malformed stream. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (!this.current) {
        const head = this.peek(Math.min(this.buffered, MAX_HEADER));
        const header = parseHeader(head);
        if (header === 'incomplete') {
          if (this.buffered >= MAX_HEADER) throw new Error('ffmpeg output is not PPM');
          return;
        }
        this.current = header;
      }
      const { width, height, headerLength } = this.current;
      const total = headerLength + width * height * 3;
      if (this.buffered < total) return;
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
      const data = all.subarray(headerLength, total);
      const rest = all.subarray(total);
      this.chunks = rest.length ? [rest] : [];
      this.buffered = rest.length;
      this.current = undefined;
      this.onImage({ width, height, data });
    }
  }

  /** Bytes received but not yet part of a complete image. */
  get pending(): number {
    return this.buffered;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0] && this.chunks[0].length >= n) return this.chunks[0].subarray(0, n);
    return Buffer.concat(this.chunks, this.buffered).subarray(0, n);
  }
}

/** Parses `P6 <w> <h> <maxval>` followed by one whitespace byte (comments `#...` allowed, as the format says). */
function parseHeader(buf: Buffer): { width: number; height: number; headerLength: number } | 'incomplete' {
  if (buf.length < 2) return 'incomplete';
  if (buf[0] !== 0x50 || buf[1] !== 0x36) throw new Error('ffmpeg output is not PPM (P6)');
  const fields: number[] = [];
  let i = 2;
  while (fields.length < 3) {
    while (i < buf.length && (isSpace(buf[i]!) || buf[i] === 0x23)) {
      if (buf[i] === 0x23) while (i < buf.length && buf[i] !== 0x0a) i++;
      else i++;
    }
    let value = 0;
    let digits = 0;
    while (i < buf.length && buf[i]! >= 0x30 && buf[i]! <= 0x39) {
      value = value * 10 + (buf[i]! - 0x30);
      digits++;
      i++;
    }
    if (i >= buf.length) return 'incomplete';
    if (digits === 0 || !isSpace(buf[i]!)) throw new Error('malformed PPM header from ffmpeg');
    fields.push(value);
  }
  const [width, height, maxval] = fields as [number, number, number];
  if (maxval !== 255) throw new Error(`PPM with maxval ${maxval}: expected 8-bit RGB (rgb24)`);
  if (width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) throw new Error(`PPM of ${width}x${height}`);
  return { width, height, headerLength: i + 1 };
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
