/**
 * The detector's input tensor with WebAssembly SIMD: the once-per-frame step of the pipeline that plain JavaScript
 * does slowest (0.35-0.45 ms for a 640x360 frame, ~0.05 ms here). The module is assembled below from its
 * instructions (no toolchain, no binary file in the repository), validated, and used only where the engine
 * supports SIMD; everywhere else `resizeToTensor` in image.ts does the same work in JavaScript.
 *
 * The kernel computes exactly what `resizeHalfWidthToTensor` (image.ts) computes, in the same order: the 2-pixel
 * sums and the vertical 1/256 weights in integers, then `* k + c` in float64, then rounded to float32. So the
 * tensor is bit-for-bit the JavaScript one (tested in align.test.ts), and detection results do not change.
 */
import type { TensorFormat } from './image.js';
import { planarFactors } from './image-tensor.js';
import type { RgbImage } from './types.js';

// ---------------------------------------------------------------------------------------------------------------
// A minimal WebAssembly assembler: just the encodings the kernel uses.

type Bytes = number[];

function uleb(n: number): Bytes {
  const out: Bytes = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(n: number): Bytes {
  const out: Bytes = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

const vec = (items: Bytes[]): Bytes => [...uleb(items.length), ...items.flat()];
const name = (s: string): Bytes => vec([...Buffer.from(s, 'utf8')].map((b) => [b]));
const section = (id: number, body: Bytes): Bytes => [id, ...uleb(body.length), ...body];

const I32 = 0x7f;
const F64 = 0x7c;
const V128 = 0x7b;

/** Instructions (core and SIMD) as byte sequences. */
const op = {
  block: [0x02, 0x40],
  loop: [0x03, 0x40],
  end: [0x0b],
  brIf: (depth: number): Bytes => [0x0d, ...uleb(depth)],
  get: (i: number): Bytes => [0x20, ...uleb(i)],
  set: (i: number): Bytes => [0x21, ...uleb(i)],
  tee: (i: number): Bytes => [0x22, ...uleb(i)],
  i32: (n: number): Bytes => [0x41, ...sleb(n)],
  i32Load: (offset = 0): Bytes => [0x28, 2, ...uleb(offset)],
  i32Add: [0x6a],
  i32Sub: [0x6b],
  i32Mul: [0x6c],
  i32LtU: [0x49],
  simd: (code: number, ...imm: Bytes): Bytes => [0xfd, ...uleb(code), ...imm],
};

const simd = {
  load: (offset = 0): Bytes => op.simd(0x00, 0, ...uleb(offset)),
  store: (offset = 0): Bytes => op.simd(0x0b, 0, ...uleb(offset)),
  shuffle: (lanes: number[]): Bytes => op.simd(0x0d, ...lanes),
  i16x8Splat: op.simd(0x10),
  f64x2Splat: op.simd(0x14),
  extaddPairwiseU8: op.simd(0x7d), // i16x8.extadd_pairwise_i8x16_u
  i32x4Add: op.simd(0xae),
  extmulLowU16: op.simd(0xbe), // i32x4.extmul_low_i16x8_u
  extmulHighU16: op.simd(0xbf), // i32x4.extmul_high_i16x8_u
  f64x2Add: op.simd(0xf0),
  f64x2Mul: op.simd(0xf2),
  f64x2ConvertLowI32: op.simd(0xfe), // f64x2.convert_low_i32x4_s
  f32x4DemoteF64: op.simd(0x5e), // f32x4.demote_f64x2_zero
};

const range = (a: number, n: number): number[] => Array.from({ length: n }, (_, i) => a + i);

/**
 * `resizeHalf(src, rows, outW, outH, out, offR, offG, offB, kR, cR, kG, cG, kB, cB)`: for each output row v,
 * rows[3v..3v+2] (int32) are the byte offsets of the two source rows and the lower row's weight in 1/256; each
 * output pixel u sums source pixels 2u and 2u+1 of both rows, weighs the rows, and writes
 * `sum * k + c` (float64, then float32) to the R, G and B planes at byte offsets offR, offG, offB from `out`.
 * outW must be a multiple of 4 (four pixels per step); the source row is 6 * outW bytes.
 */
function resizeHalfModule(): Uint8Array {
  // Parameters 0..13 (i32 x 8, f64 x 6), then locals: i32 x 6 (14..19), v128 x 13 (20..32).
  const SRC = 0, ROWS = 1, OUTW = 2, OUTH = 3, OUT = 4, OFFR = 5, OFFG = 6, OFFB = 7;
  const KR = 8, CR = 9, KG = 10, CG = 11, KB = 12, CB = 13;
  const V = 14, U = 15, A = 16, D = 17, I4 = 18, ROWP = 19;
  const VW0 = 20, VW1 = 21, VKR = 22, VCR = 23, VKG = 24, VCG = 25, VKB = 26, VCB = 27;
  const ARG = 28, AB = 29, DRG = 30, DB = 31, T = 32;
  // Byte k of the 24 loaded at the pixel pair (16 from `a`, 16 from `a + 8`): pixel p channel c is byte 3p + c.
  // Pairs (2j, 2j+1) of channel c: bytes 6j+c and 6j+c+3; j = 0, 1 from the first load, j = 2, 3 from the second.
  const pairs = (c: number): number[] => [0, 1, 2, 3].flatMap((j) => (j < 2 ? [6 * j + c, 6 * j + c + 3] : [16 + 6 * j + c - 8, 16 + 6 * j + c - 5]));
  const RG = [...pairs(0), ...pairs(1)];
  const BB = [...pairs(2), ...pairs(2)];
  const sums = (ptr: number, lanes: number[]): Bytes => [...op.get(ptr), ...simd.load(0), ...op.get(ptr), ...simd.load(8), ...simd.shuffle(lanes), ...simd.extaddPairwiseU8];
  /** Store four float32 (`sum * k + c`) from the i32x4 in T at out + off + i4. */
  const store4 = (off: number, k: number, c: number): Bytes => [
    ...op.get(OUT),
    ...op.get(off),
    ...op.i32Add,
    ...op.get(I4),
    ...op.i32Add,
    ...op.get(T),
    ...simd.f64x2ConvertLowI32,
    ...op.get(k),
    ...simd.f64x2Mul,
    ...op.get(c),
    ...simd.f64x2Add,
    ...simd.f32x4DemoteF64,
    ...op.get(T),
    ...op.get(T),
    ...simd.shuffle([...range(8, 8), ...range(8, 8)]),
    ...simd.f64x2ConvertLowI32,
    ...op.get(k),
    ...simd.f64x2Mul,
    ...op.get(c),
    ...simd.f64x2Add,
    ...simd.f32x4DemoteF64,
    ...simd.shuffle([...range(0, 8), ...range(16, 8)]),
    ...simd.store(0),
  ];
  /** T = extmul(x, VW0) + extmul(y, VW1) with the low or high halves. */
  const weigh = (x: number, y: number, ext: Bytes): Bytes => [...op.get(x), ...op.get(VW0), ...ext, ...op.get(y), ...op.get(VW1), ...ext, ...simd.i32x4Add, ...op.set(T)];
  const body: Bytes = [
    ...[KR, CR, KG, CG, KB, CB].flatMap((p, i) => [...op.get(p), ...simd.f64x2Splat, ...op.set(VKR + i)]),
    ...op.i32(0),
    ...op.set(V),
    ...op.i32(0),
    ...op.set(I4),
    ...op.block,
    ...op.loop,
    // rowp = rows + 12 v; a = src + rows[3v]; d = src + rows[3v + 1]; weights from rows[3v + 2]
    ...op.get(ROWS),
    ...op.get(V),
    ...op.i32(12),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(ROWP),
    ...op.get(SRC),
    ...op.get(ROWP),
    ...op.i32Load(0),
    ...op.i32Add,
    ...op.set(A),
    ...op.get(SRC),
    ...op.get(ROWP),
    ...op.i32Load(4),
    ...op.i32Add,
    ...op.set(D),
    ...op.get(ROWP),
    ...op.i32Load(8),
    ...simd.i16x8Splat,
    ...op.set(VW1),
    ...op.i32(256),
    ...op.get(ROWP),
    ...op.i32Load(8),
    ...op.i32Sub,
    ...simd.i16x8Splat,
    ...op.set(VW0),
    ...op.i32(0),
    ...op.set(U),
    ...op.loop,
    ...sums(A, RG),
    ...op.set(ARG),
    ...sums(A, BB),
    ...op.set(AB),
    ...sums(D, RG),
    ...op.set(DRG),
    ...sums(D, BB),
    ...op.set(DB),
    ...weigh(ARG, DRG, simd.extmulLowU16),
    ...store4(OFFR, VKR, VCR),
    ...weigh(ARG, DRG, simd.extmulHighU16),
    ...store4(OFFG, VKG, VCG),
    ...weigh(AB, DB, simd.extmulLowU16),
    ...store4(OFFB, VKB, VCB),
    // a += 24; d += 24; i4 += 16; u += 4; continue while u < outW
    ...op.get(A),
    ...op.i32(24),
    ...op.i32Add,
    ...op.set(A),
    ...op.get(D),
    ...op.i32(24),
    ...op.i32Add,
    ...op.set(D),
    ...op.get(I4),
    ...op.i32(16),
    ...op.i32Add,
    ...op.set(I4),
    ...op.get(U),
    ...op.i32(4),
    ...op.i32Add,
    ...op.tee(U),
    ...op.get(OUTW),
    ...op.i32LtU,
    ...op.brIf(0),
    ...op.end,
    // v += 1; continue while v < outH
    ...op.get(V),
    ...op.i32(1),
    ...op.i32Add,
    ...op.tee(V),
    ...op.get(OUTH),
    ...op.i32LtU,
    ...op.brIf(0),
    ...op.end,
    ...op.end,
    ...op.end,
  ];
  const locals = vec([
    [...uleb(6), I32],
    [...uleb(13), V128],
  ]);
  const func = [...locals, ...body];
  const params = [...Array<number>(8).fill(I32), ...Array<number>(6).fill(F64)];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([[0x60, ...vec(params.map((p) => [p])), ...vec([])]])),
    ...section(3, vec([uleb(0)])),
    ...section(5, vec([[0x00, ...uleb(1)]])),
    ...section(7, vec([
      [...name('memory'), 0x02, ...uleb(0)],
      [...name('resizeHalf'), 0x00, ...uleb(0)],
    ])),
    ...section(10, vec([[...uleb(func.length), ...func]])),
  ]);
}

// ---------------------------------------------------------------------------------------------------------------

type ResizeHalf = (
  src: number,
  rows: number,
  outW: number,
  outH: number,
  out: number,
  offR: number,
  offG: number,
  offB: number,
  kR: number,
  cR: number,
  kG: number,
  cG: number,
  kB: number,
  cB: number,
) => void;

const PAGE = 65536;
const align16 = (n: number): number => (n + 15) & ~15;

/** Row taps of a centre-aligned linear resize of `src` rows to `dst` (as image.ts bilinearTaps): offsets and 1/256 weight. */
function rowTaps(src: number, dst: number, stride: number): Int32Array {
  const out = new Int32Array(3 * dst);
  const scale = src / dst;
  for (let o = 0; o < dst; o++) {
    const x = Math.min(Math.max((o + 0.5) * scale - 0.5, 0), src - 1);
    const a = Math.floor(x);
    const b = Math.min(a + 1, src - 1);
    out[3 * o] = a * stride;
    out[3 * o + 1] = b * stride;
    out[3 * o + 2] = Math.round((x - a) * 256);
  }
  return out;
}

/** The part of the WebAssembly JS API used here (its types live in lib.dom, which this project does not load). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmModule {
  readonly kind?: 'module';
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { readonly exports: Record<string, unknown> };
}

let compiled: WasmModule | null | undefined;

/** The compiled kernel module, or null where WebAssembly SIMD is unavailable (or FOOTFALL_SIMD=off). */
function kernelModule(): WasmModule | null {
  if (compiled !== undefined) return compiled;
  compiled = null;
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (process.env.FOOTFALL_SIMD === 'off' || !wasm) return compiled;
  try {
    const bytes = resizeHalfModule();
    if (wasm.validate(bytes)) compiled = new wasm.Module(bytes);
  } catch {
    compiled = null;
  }
  return compiled;
}

/**
 * One instance of the kernels with its own memory: the frame is copied in, the tensor is made in it and handed
 * out as a view (valid until the next call). Not for concurrent use: one per analyzer, guarded there.
 */
export class SimdTensors {
  private readonly memory: WasmMemory;
  private readonly resizeHalf: ResizeHalf;
  private taps: { key: string; rows: Int32Array } | undefined;

  private constructor(exports: Record<string, unknown>) {
    this.memory = exports.memory as WasmMemory;
    this.resizeHalf = exports.resizeHalf as ResizeHalf;
  }

  /** undefined when WebAssembly SIMD is not available here. */
  static create(): SimdTensors | undefined {
    const mod = kernelModule();
    const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    return mod && wasm ? new SimdTensors(new wasm.Instance(mod, {}).exports) : undefined;
  }

  /** Whether `detectorTensor` handles this frame and tensor size (else use resizeToTensor). */
  static handles(img: RgbImage, outW: number, outH: number, fmt: TensorFormat): boolean {
    return img.width === 2 * outW && img.height <= 2 * outH && fmt.colour !== 'grey' && outW % 4 === 0 && outH > 0;
  }

  /**
   * The frame stretched to outW x outH as a normalised NCHW float32 tensor, exactly as resizeToTensor makes it
   * for a frame twice as wide as the tensor (see `handles`). The result is a view into this instance's memory.
   */
  detectorTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat): Float32Array {
    const frameBytes = img.width * img.height * 3;
    const plane = outW * outH;
    const tensorAt = align16(frameBytes);
    const rowsAt = tensorAt + plane * 3 * 4;
    const need = rowsAt + outH * 12;
    if (this.memory.buffer.byteLength < need) this.memory.grow(Math.ceil((need - this.memory.buffer.byteLength) / PAGE));
    const key = `${img.width}x${img.height}>${outW}x${outH}`;
    if (this.taps?.key !== key) this.taps = { key, rows: rowTaps(img.height, outH, img.width * 3) };
    const buf = this.memory.buffer;
    new Uint8Array(buf, 0, frameBytes).set(img.data.subarray(0, frameBytes));
    new Int32Array(buf, rowsAt, outH * 3).set(this.taps.rows);
    // Two columns summed and weights in 1/256: a sample sums to pixel * 512.
    const f = planarFactors(fmt, plane, 1 / 512);
    this.resizeHalf(
      0,
      rowsAt,
      outW,
      outH,
      tensorAt,
      4 * f.outR,
      4 * plane,
      4 * f.outB,
      f.kr,
      f.cr,
      f.kg,
      f.cg,
      f.kb,
      f.cb,
    );
    return new Float32Array(buf, tensorAt, plane * 3);
  }
}
