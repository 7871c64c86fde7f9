/**
 * The Hamming kernel: a tiny WebAssembly module, assembled here byte by byte (no toolchain, no file).
 * Equivalent text format, for review:
 *
 *   (module
 *     (import "k" "mem" (memory 1))
 *     ;; For each of n 64-byte codes from `codes`: d = popcount(code xor query); out[i] = d (u16); hist[d] += 1 (i32).
 *     (func (export "scan") (param $codes i32) (param $n i32) (param $q i32) (param $out i32) (param $hist i32)
 *       (local $w0 i64) ... (local $w7 i64) (local $end i32) (local $d i32) (local $h i32)
 *       (local.set $w0 (i64.load offset=0 (local.get $q)))  ... $w1 .. $w7 at offsets 8 .. 56
 *       (local.set $end (i32.add (local.get $codes) (i32.shl (local.get $n) (i32.const 6))))
 *       (block (loop
 *         (br_if 1 (i32.ge_u (local.get $codes) (local.get $end)))
 *         (local.set $d (i32.wrap_i64 (i64.add
 *           (i64.add (i64.add (i64.popcnt (i64.xor (i64.load offset=0 (local.get $codes)) (local.get $w0)))
 *                             (i64.popcnt (i64.xor (i64.load offset=8 (local.get $codes)) (local.get $w1))))
 *                    (i64.add (i64.popcnt ... offset=16 ... $w2) (i64.popcnt ... offset=24 ... $w3)))
 *           (i64.add (i64.add (i64.popcnt ... offset=32 ... $w4) (i64.popcnt ... offset=40 ... $w5))
 *                    (i64.add (i64.popcnt ... offset=48 ... $w6) (i64.popcnt ... offset=56 ... $w7))))))
 *         (i32.store16 (local.get $out) (local.get $d))
 *         (local.set $h (i32.add (local.get $hist) (i32.shl (local.get $d) (i32.const 2))))
 *         (i32.store (local.get $h) (i32.add (i32.load (local.get $h)) (i32.const 1)))
 *         (local.set $out (i32.add (local.get $out) (i32.const 2)))
 *         (local.set $codes (i32.add (local.get $codes) (i32.const 64)))
 *         (br 0))))
 *     ;; Writes to cand (i32) the indexes i < n with out[i] <= thr, in order, at most max of them; returns how many.
 *     (func (export "collect") (param $out i32) (param $n i32) (param $thr i32) (param $cand i32) (param $max i32)
 *       (result i32) (local $i i32) (local $c i32) (local $m i32) (local $end i32) (local $t v128)
 *       (local.set $t (i16x8.splat (local.get $thr)))
 *       (local.set $end (i32.and (local.get $n) (i32.const -8)))
 *       (block (loop                                   ;; eight slots at a time
 *         (br_if 1 (i32.ge_u (local.get $i) (local.get $end)))
 *         (br_if 1 (i32.ge_u (local.get $c) (local.get $max)))
 *         (local.set $m (i16x8.bitmask (i16x8.le_u
 *           (v128.load (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 1)))) (local.get $t))))
 *         (block (loop                                 ;; the set bits, lowest first
 *           (br_if 1 (i32.eqz (local.get $m)))
 *           (br_if 1 (i32.ge_u (local.get $c) (local.get $max)))
 *           (i32.store (i32.add (local.get $cand) (i32.shl (local.get $c) (i32.const 2)))
 *             (i32.add (local.get $i) (i32.ctz (local.get $m))))
 *           (local.set $c (i32.add (local.get $c) (i32.const 1)))
 *           (local.set $m (i32.and (local.get $m) (i32.sub (local.get $m) (i32.const 1))))
 *           (br 0)))
 *         (local.set $i (i32.add (local.get $i) (i32.const 8)))
 *         (br 0)))
 *       (block (loop                                   ;; the last n % 8 slots, one by one
 *         (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
 *         (br_if 1 (i32.ge_u (local.get $c) (local.get $max)))
 *         (if (i32.le_u (i32.load16_u (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 1)))) (local.get $thr))
 *           (then (i32.store (i32.add (local.get $cand) (i32.shl (local.get $c) (i32.const 2))) (local.get $i))
 *                 (local.set $c (i32.add (local.get $c) (i32.const 1)))))
 *         (local.set $i (i32.add (local.get $i) (i32.const 1)))
 *         (br 0)))
 *       (local.get $c))
 *     ;; "scanSimd": the same as "scan" with v128 loads, v128.xor, i8x16.popcnt, i8x16.add and a horizontal sum.
 *     (func (export "scanSimd") ...)
 *     ;; "scanHalf": "scan" over 32-byte codes (four words; the first halves of the codes, stored apart).
 *     (func (export "scanHalf") ...)
 *     ;; For k < c: s = list[k]; out[s] += popcount over 4 words (code at codes + s*32 xor the query); hist[out[s]] += 1.
 *     (func (export "finish") (param $list i32) (param $c i32) (param $codes i32) (param $q i32) (param $out i32) (param $hist i32) ...)
 *     ;; "collect" over the listed slots: writes to cand the s = list[k] with out[s] <= thr, at most max; returns how many.
 *     (func (export "collectListed") (param $list i32) (param $c i32) (param $out i32) (param $thr i32) (param $cand i32) (param $max i32) (result i32) ...))
 *
 * Scalar i64.popcnt (one POPCNT instruction) beat 128-bit i8x16.popcnt (a shuffle sequence on x64) by about 1.6x
 * here: see docs/benchmarks.md.
 */
export interface HammingExports {
  scan(codes: number, n: number, query: number, out: number, hist: number): void;
  collect(out: number, n: number, thr: number, cand: number, max: number): number;
  /** `scan` with 128-bit SIMD (i8x16.popcnt): slower here than scalar i64.popcnt; kept for the benchmark. */
  scanSimd(codes: number, n: number, query: number, out: number, hist: number): void;
  /** `scan` over 32-byte codes (the first 256 bits of each code, stored apart): a search's first pass. */
  scanHalf(codes: number, n: number, query: number, out: number, hist: number): void;
  /**
   * For the c slots listed (i32) at `list`: out[s] += popcount(the 32-byte code at codes + s * 32 xor the query's
   * 32 bytes) (the second halves: out[s] becomes the whole 512-bit distance); hist[out[s]] += 1.
   */
  finish(list: number, c: number, codes: number, query: number, out: number, hist: number): void;
  /** `collect` over the c slots listed at `list`: writes to cand those with out[s] <= thr, at most max; returns how many. */
  collectListed(list: number, c: number, out: number, thr: number, cand: number, max: number): number;
}

/** WebAssembly pages are 64 KiB. */
export const PAGE = 65536;

const uleb = (n: number): number[] => {
  const o: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    o.push(b);
  } while (n);
  return o;
};
const sleb = (n: number): number[] => {
  const o: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...o, b];
    o.push(b | 0x80);
  }
};
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const name = (s: string): number[] => [...uleb(s.length), ...Buffer.from(s, 'utf8')];

const I32 = 0x7f;
const V128 = 0x7b;
const get = (i: number) => [0x20, ...uleb(i)];
const set = (i: number) => [0x21, ...uleb(i)];
const tee = (i: number) => [0x22, ...uleb(i)];
const i32 = (n: number) => [0x41, ...sleb(n)];
const ADD = [0x6a];
const SHL = [0x74];
const GE_U = [0x4f];
const LE_U = [0x4d];
const BLOCK = [0x02, 0x40];
const LOOP = [0x03, 0x40];
const IF = [0x04, 0x40];
const END = [0x0b];
const BR_IF = (d: number) => [0x0d, d];
const BR = (d: number) => [0x0c, d];
const LOAD = [0x28, 2, 0];
const STORE = [0x36, 2, 0];
const LOAD16_U = [0x2f, 1, 0];
const STORE16 = [0x3b, 1, 0];
const simd = (op: number) => [0xfd, ...uleb(op)];
const V_LOAD = (offset: number) => [...simd(0x00), 4, ...uleb(offset)];
const V_XOR = simd(0x51);
const I8_POPCNT = simd(0x62);
const I8_ADD = simd(0x6e);
const I16_EXTADD_U = simd(0x7d);
const I32_EXTADD_U = simd(0x7f);
const LANE = (l: number) => [...simd(0x1b), l];
const I16_SPLAT = simd(0x10);
const I16_LE_U = simd(0x34);
const I16_BITMASK = simd(0x84);
const AND = [0x71];
const SUB = [0x6b];
const EQZ = [0x45];
const CTZ = [0x68];

function scanSimdBody(): number[] {
  const [codes, n, q, out, hist] = [0, 1, 2, 3, 4];
  const [q0, end, v, d, h] = [5, 9, 10, 11, 12];
  const block = (k: number) => [...get(codes), ...V_LOAD(16 * k), ...get(q0 + k), ...V_XOR, ...I8_POPCNT];
  return [
    ...[0, 1, 2, 3].flatMap((k) => [...get(q), ...V_LOAD(16 * k), ...set(q0 + k)]),
    ...get(codes), ...get(n), ...i32(6), ...SHL, ...ADD, ...set(end),
    ...BLOCK, ...LOOP,
    ...get(codes), ...get(end), ...GE_U, ...BR_IF(1),
    ...block(0), ...block(1), ...I8_ADD, ...block(2), ...I8_ADD, ...block(3), ...I8_ADD,
    ...I16_EXTADD_U, ...I32_EXTADD_U, ...tee(v),
    ...LANE(0), ...get(v), ...LANE(1), ...ADD, ...get(v), ...LANE(2), ...ADD, ...get(v), ...LANE(3), ...ADD, ...set(d),
    ...get(out), ...get(d), ...STORE16,
    ...get(hist), ...get(d), ...i32(2), ...SHL, ...ADD, ...tee(h), ...get(h), ...LOAD, ...i32(1), ...ADD, ...STORE,
    ...get(out), ...i32(2), ...ADD, ...set(out),
    ...get(codes), ...i32(64), ...ADD, ...set(codes),
    ...BR(0), ...END, ...END,
    ...END,
  ];
}

const I64 = 0x7e;
const I64_LOAD = (offset: number) => [0x29, 3, ...uleb(offset)];
const I64_XOR = [0x85];
const I64_POPCNT = [0x7b];
const I64_ADD = [0x7c];
const WRAP = [0xa7];

/** `scan` over codes of `words` 64-bit words (8: the whole 512-bit code; 4: one half, the first pass of a search). */
function scanBody(words: 4 | 8): number[] {
  const [codes, n, q, out, hist] = [0, 1, 2, 3, 4];
  const [w0, end, d, h] = [5, 13, 14, 15];
  const word = (k: number) => [...get(codes), ...I64_LOAD(8 * k), ...get(w0 + k), ...I64_XOR, ...I64_POPCNT];
  const sum =
    words === 8
      ? [...word(0), ...word(1), ...I64_ADD, ...word(2), ...word(3), ...I64_ADD, ...I64_ADD,
         ...word(4), ...word(5), ...I64_ADD, ...word(6), ...word(7), ...I64_ADD, ...I64_ADD, ...I64_ADD]
      : [...word(0), ...word(1), ...I64_ADD, ...word(2), ...word(3), ...I64_ADD, ...I64_ADD];
  return [
    ...Array.from({ length: words }, (_, k) => [...get(q), ...I64_LOAD(8 * k), ...set(w0 + k)]).flat(),
    ...get(codes), ...get(n), ...i32(words === 8 ? 6 : 5), ...SHL, ...ADD, ...set(end),
    ...BLOCK, ...LOOP,
    ...get(codes), ...get(end), ...GE_U, ...BR_IF(1),
    ...sum,
    ...WRAP, ...set(d),
    ...get(out), ...get(d), ...STORE16,
    ...get(hist), ...get(d), ...i32(2), ...SHL, ...ADD, ...tee(h), ...get(h), ...LOAD, ...i32(1), ...ADD, ...STORE,
    ...get(out), ...i32(2), ...ADD, ...set(out),
    ...get(codes), ...i32(words * 8), ...ADD, ...set(codes),
    ...BR(0), ...END, ...END,
    ...END,
  ];
}

/** "finish": the second half of the listed slots' codes (32 bytes each) added to their first-pass distances. */
function finishBody(): number[] {
  const [list, c, codes, q, out, hist] = [0, 1, 2, 3, 4, 5];
  const [w0, k, a, d, h, s, o] = [6, 10, 11, 12, 13, 14, 15];
  const word = (i: number) => [...get(a), ...I64_LOAD(8 * i), ...get(w0 + i), ...I64_XOR, ...I64_POPCNT];
  return [
    ...[0, 1, 2, 3].flatMap((i) => [...get(q), ...I64_LOAD(8 * i), ...set(w0 + i)]),
    ...BLOCK, ...LOOP,
    ...get(k), ...get(c), ...GE_U, ...BR_IF(1),
    ...get(list), ...get(k), ...i32(2), ...SHL, ...ADD, ...LOAD, ...set(s),
    ...get(codes), ...get(s), ...i32(5), ...SHL, ...ADD, ...set(a),
    ...get(out), ...get(s), ...i32(1), ...SHL, ...ADD, ...tee(o), ...LOAD16_U,
    ...word(0), ...word(1), ...I64_ADD, ...word(2), ...word(3), ...I64_ADD, ...I64_ADD, ...WRAP,
    ...ADD, ...set(d),
    ...get(o), ...get(d), ...STORE16,
    ...get(hist), ...get(d), ...i32(2), ...SHL, ...ADD, ...tee(h), ...get(h), ...LOAD, ...i32(1), ...ADD, ...STORE,
    ...get(k), ...i32(1), ...ADD, ...set(k),
    ...BR(0), ...END, ...END,
    ...END,
  ];
}

/** "collectListed": `collect` over the listed slots only. */
function collectListedBody(): number[] {
  const [list, c, out, thr, cand, max] = [0, 1, 2, 3, 4, 5];
  const [k, m, s] = [6, 7, 8];
  return [
    ...BLOCK, ...LOOP,
    ...get(k), ...get(c), ...GE_U, ...BR_IF(1),
    ...get(m), ...get(max), ...GE_U, ...BR_IF(1),
    ...get(list), ...get(k), ...i32(2), ...SHL, ...ADD, ...LOAD, ...set(s),
    ...get(out), ...get(s), ...i32(1), ...SHL, ...ADD, ...LOAD16_U, ...get(thr), ...LE_U,
    ...IF,
    ...get(cand), ...get(m), ...i32(2), ...SHL, ...ADD, ...get(s), ...STORE,
    ...get(m), ...i32(1), ...ADD, ...set(m),
    ...END,
    ...get(k), ...i32(1), ...ADD, ...set(k),
    ...BR(0), ...END, ...END,
    ...get(m),
    ...END,
  ];
}

/**
 * "collect": eight distances at a time (i16x8.le_u against the threshold, a bitmask, its set bits in index order),
 * then the last n % 8 one by one. The scalar loop's branch per slot was 4 % of head office's CPU at 400 visits a
 * second (a `perf` profile: ~50 µs a face over 20,000 slots).
 */
function collectBody(): number[] {
  const [out, n, thr, cand, max, i, c, m, end, t] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const hit = (slot: number[]) => [
    ...get(cand), ...get(c), ...i32(2), ...SHL, ...ADD, ...slot, ...STORE,
    ...get(c), ...i32(1), ...ADD, ...set(c),
  ];
  return [
    ...get(thr), ...I16_SPLAT, ...set(t),
    ...get(n), ...i32(-8), ...AND, ...set(end),
    ...BLOCK, ...LOOP,
    ...get(i), ...get(end), ...GE_U, ...BR_IF(1),
    ...get(c), ...get(max), ...GE_U, ...BR_IF(1),
    ...get(out), ...get(i), ...i32(1), ...SHL, ...ADD, ...V_LOAD(0), ...get(t), ...I16_LE_U, ...I16_BITMASK, ...set(m),
    ...BLOCK, ...LOOP,
    ...get(m), ...EQZ, ...BR_IF(1),
    ...get(c), ...get(max), ...GE_U, ...BR_IF(1),
    ...hit([...get(i), ...get(m), ...CTZ, ...ADD]),
    ...get(m), ...get(m), ...i32(1), ...SUB, ...AND, ...set(m),
    ...BR(0), ...END, ...END,
    ...get(i), ...i32(8), ...ADD, ...set(i),
    ...BR(0), ...END, ...END,
    // The last n % 8 slots.
    ...BLOCK, ...LOOP,
    ...get(i), ...get(n), ...GE_U, ...BR_IF(1),
    ...get(c), ...get(max), ...GE_U, ...BR_IF(1),
    ...get(out), ...get(i), ...i32(1), ...SHL, ...ADD, ...LOAD16_U, ...get(thr), ...LE_U,
    ...IF, ...hit(get(i)), ...END,
    ...get(i), ...i32(1), ...ADD, ...set(i),
    ...BR(0), ...END, ...END,
    ...get(c),
    ...END,
  ];
}

const fn = (locals: number[][], body: number[]) => {
  const b = [...vec(locals), ...body];
  return [...uleb(b.length), ...b];
};

/** The module's bytes. */
export function hammingModuleBytes(): Uint8Array {
  const five = vec([[I32], [I32], [I32], [I32], [I32]]);
  const six = vec([[I32], [I32], [I32], [I32], [I32], [I32]]);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, ...five, 0x00], [0x60, ...five, ...vec([[I32]])], [0x60, ...six, 0x00], [0x60, ...six, ...vec([[I32]])]])),
    ...section(2, vec([[...name('k'), ...name('mem'), 0x02, 0x00, 0x01]])),
    ...section(3, vec([[0], [1], [0], [0], [2], [3]])),
    ...section(7, vec([
      [...name('scan'), 0x00, 0],
      [...name('collect'), 0x00, 1],
      [...name('scanSimd'), 0x00, 2],
      [...name('scanHalf'), 0x00, 3],
      [...name('finish'), 0x00, 4],
      [...name('collectListed'), 0x00, 5],
    ])),
    ...section(10, vec([
      fn([[8, I64], [3, I32]], scanBody(8)),
      fn([[4, I32], [1, V128]], collectBody()),
      fn([[4, V128], [1, I32], [1, V128], [2, I32]], scanSimdBody()),
      fn([[8, I64], [3, I32]], scanBody(4)),
      fn([[4, I64], [6, I32]], finishBody()),
      fn([[3, I32]], collectListedBody()),
    ])),
  ]);
}

/**
 * The re-rank kernel: dot products of one query with many templates, in a memory of its own (the gallery's templates).
 * Equivalent text format:
 *
 *   (module
 *     (import "k" "mem" (memory 1))
 *     ;; For i < n: s = cand[i]; out[i] = the 512-float dot product of the query at `q` with the template at
 *     ;; TEMPLATES + s * 2048, summed as four f32x4 accumulators (16 partial sums), then promoted to f64 (f64).
 *     (func (export "dots") (param $q i32) (param $cand i32) (param $n i32) (param $out i32)
 *       (local $i i32) (local $a i32) (local $j i32) (local $acc0 v128) ... (local $acc3 v128)
 *       (block (loop
 *         (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
 *         (local.set $a (i32.add (i32.const TEMPLATES)
 *           (i32.shl (i32.load (i32.add (local.get $cand) (i32.shl (local.get $i) (i32.const 2)))) (i32.const 11))))
 *         (local.set $acc0 (v128.const 0)) ... $acc3
 *         (local.set $j (i32.const 0))
 *         (loop
 *           (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (v128.load offset=0 (i32.add (local.get $a) (local.get $j)))
 *                                                                     (v128.load offset=0 (i32.add (local.get $q) (local.get $j))))))
 *           ... $acc1 .. $acc3 at offsets 16, 32, 48
 *           (br_if 0 (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 64))) (i32.const 2048))))
 *         (local.set $acc0 (f32x4.add (f32x4.add (local.get $acc0) (local.get $acc1)) (f32x4.add (local.get $acc2) (local.get $acc3))))
 *         (f64.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3)))
 *           (f64.add (f64.add (f64.promote_f32 (f32x4.extract_lane 0 (local.get $acc0))) (f64.promote_f32 (f32x4.extract_lane 1 ...)))
 *                    (f64.add (f64.promote_f32 (f32x4.extract_lane 2 ...)) (f64.promote_f32 (f32x4.extract_lane 3 ...)))))
 *         (local.set $i (i32.add (local.get $i) (i32.const 1)))
 *         (br 0))))
 *
 * Four-lane float32 products and sums (the JavaScript `dot` sums in float64): the similarities differ from a float64
 * sum by about 1e-7, far inside the thresholds' margins (0.45 against same-person scores of 0.49 and more).
 */
export interface DotExports {
  dots(q: number, cand: number, n: number, out: number): void;
}

/** Where the templates start in the re-rank kernel's memory (the first page holds the query, the slots and the results). */
export const TEMPLATES = PAGE;

function dotsBody(): number[] {
  const [q, cand, n, out] = [0, 1, 2, 3];
  const [i, a, j, acc0] = [4, 5, 6, 7];
  const F32_ADD = simd(0xe4);
  const F32_MUL = simd(0xe6);
  const ZERO = [...simd(0x0c), ...new Array<number>(16).fill(0)];
  const F32_LANE = (l: number) => [...simd(0x1f), l];
  const PROMOTE = [0xbb];
  const F64_ADD = [0xa0];
  const F64_STORE = [0x39, 3, 0];
  const LT_U = [0x49];
  const step = (k: number) => [
    ...get(acc0 + k),
    ...get(a), ...get(j), ...ADD, ...V_LOAD(16 * k),
    ...get(q), ...get(j), ...ADD, ...V_LOAD(16 * k),
    ...F32_MUL, ...F32_ADD, ...set(acc0 + k),
  ];
  const lane = (l: number) => [...get(acc0), ...F32_LANE(l), ...PROMOTE];
  return [
    ...BLOCK, ...LOOP,
    ...get(i), ...get(n), ...GE_U, ...BR_IF(1),
    ...i32(TEMPLATES), ...get(cand), ...get(i), ...i32(2), ...SHL, ...ADD, ...LOAD, ...i32(11), ...SHL, ...ADD, ...set(a),
    ...[0, 1, 2, 3].flatMap((k) => [...ZERO, ...set(acc0 + k)]),
    ...i32(0), ...set(j),
    ...LOOP,
    ...step(0), ...step(1), ...step(2), ...step(3),
    ...get(j), ...i32(64), ...ADD, ...tee(j), ...i32(2048), ...LT_U, ...BR_IF(0),
    ...END,
    ...get(acc0), ...get(acc0 + 1), ...F32_ADD, ...get(acc0 + 2), ...get(acc0 + 3), ...F32_ADD, ...F32_ADD, ...set(acc0),
    ...get(out), ...get(i), ...i32(3), ...SHL, ...ADD,
    ...lane(0), ...lane(1), ...F64_ADD, ...lane(2), ...lane(3), ...F64_ADD, ...F64_ADD,
    ...F64_STORE,
    ...get(i), ...i32(1), ...ADD, ...set(i),
    ...BR(0), ...END, ...END,
    ...END,
  ];
}

/** The re-rank module's bytes. */
export function dotModuleBytes(): Uint8Array {
  const four = vec([[I32], [I32], [I32], [I32]]);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, ...four, 0x00]])),
    ...section(2, vec([[...name('k'), ...name('mem'), 0x02, 0x00, 0x01]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name('dots'), 0x00, 0]])),
    ...section(10, vec([fn([[3, I32], [4, V128]], dotsBody())])),
  ]);
}

/** The part of the WebAssembly API used here (the project's `lib` has no DOM, so no WebAssembly types). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
  validate(bytes: Uint8Array): boolean;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

export function newMemory(pages: number): WasmMemory {
  return new wasm.Memory({ initial: pages, maximum: 65536 });
}

/** A module's bytes compiled once, on first use, and an instance of it over a gallery's memory each time. */
function kernel<T>(bytes: () => Uint8Array): (memory: WasmMemory) => T {
  let compiled: object | undefined;
  return (memory) => {
    if (!compiled) {
      const b = bytes();
      if (!wasm.validate(b)) throw new Error('this runtime cannot run the face gallery kernel (WebAssembly with SIMD)');
      compiled = new wasm.Module(b);
    }
    return new wasm.Instance(compiled, { k: { mem: memory } }).exports as T;
  };
}

/** An instance of the re-rank kernel over `memory` (each gallery's templates have their own memory). */
export const dotKernel = kernel<DotExports>(dotModuleBytes);

/** An instance of the Hamming kernel over `memory` (each gallery has its own memory). */
export const hammingKernel = kernel<HammingExports>(hammingModuleBytes);
