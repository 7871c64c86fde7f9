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
  /** Start of a header that has not arrived whole yet (a few bytes). */
  private head: Buffer[] = [];
  private headBytes = 0;
  /** The image being filled: its own buffer of exactly width x height x 3 bytes, allocated when its header is read. */
  private current: { width: number; height: number; headerLength: number; data: Buffer; filled: number } | undefined;

  /**
   * @param onImage called for every complete image.
   * @param allocate gives the buffer of an image once its header is read (width x height x 3 bytes); by default a
   * new one each time. CameraWorker hands out buffers of its own that it fills again later (see worker.ts).
   */
  constructor(
    private readonly onImage: (image: RawImage) => void,
    private readonly allocate: (width: number, height: number) => Buffer = (w, h) => Buffer.allocUnsafe(w * h * 3),
  ) {}

  /**
   * Feeds bytes from the pipe; calls onImage for every complete image. Throws on a malformed stream. Each byte is
   * copied once, straight into its image's buffer: no joining of the pipe's chunks, and nothing of the next image
   * is kept alive with this one (a camera's frames are the agent's largest allocations, 0.7 MB at 640x360).
   */
  push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (!this.current) {
        const rest = chunk.subarray(off, off + MAX_HEADER);
        const head = this.headBytes === 0 ? rest : Buffer.concat([...this.head, rest]).subarray(0, MAX_HEADER);
        const header = parseHeader(head);
        if (header === 'incomplete') {
          if (this.headBytes + chunk.length - off >= MAX_HEADER) throw new Error('ffmpeg output is not PPM');
          this.head.push(Buffer.from(chunk.subarray(off)));
          this.headBytes += chunk.length - off;
          return;
        }
        off += header.headerLength - this.headBytes;
        this.head = [];
        this.headBytes = 0;
        const data = this.allocate(header.width, header.height);
        if (data.length !== header.width * header.height * 3) throw new Error(`PPM buffer of ${data.length} bytes for ${header.width}x${header.height}`);
        this.current = { ...header, data, filled: 0 };
      }
      const cur = this.current;
      const n = Math.min(chunk.length - off, cur.data.length - cur.filled);
      chunk.copy(cur.data, cur.filled, off, off + n);
      cur.filled += n;
      off += n;
      if (cur.filled === cur.data.length) {
        this.current = undefined;
        this.onImage({ width: cur.width, height: cur.height, data: cur.data });
      }
    }
  }

  /** Bytes received but not yet part of a complete image. */
  get pending(): number {
    return this.headBytes + (this.current ? this.current.headerLength + this.current.filled : 0);
  }
}

/**
 * Two picture buffers used in turn, for a PpmReader's `allocate` (CameraWorker): `next` never returns the one still
 * in use, so consecutive pictures alternate and capture allocates nothing per picture. Remade when the size changes.
 */
export class PictureBuffers {
  private ring: Buffer[] = [];

  next(size: number, inUse?: Buffer): Buffer {
    if (this.ring[0]?.length !== size) this.ring = [Buffer.allocUnsafe(size), Buffer.allocUnsafe(size)];
    return this.ring[0] === inUse ? this.ring[1]! : this.ring[0]!;
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
