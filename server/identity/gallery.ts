import { CODE_BYTES, SignCoder } from './signcode.js';
import { DIM, normalizeInto, templateView } from './vector.js';
import { PAGE, TEMPLATES, dotKernel, hammingKernel, newMemory, type DotExports, type HammingExports, type WasmMemory } from './wasm.js';

/**
 * One company's face gallery, in memory: ranks customer templates by cosine similarity to an embedding.
 * Thresholds are the caller's business (see `matcher.ts`); the gallery only ranks.
 *
 * Search is a prefilter and an exact re-rank (measurements in docs/benchmarks.md, reasoning in docs/identity.md):
 * 1. prefilter: every template has a 512-bit sign code (`signcode.ts`), stored as two halves of 256 bits. A WebAssembly
 *    kernel (`wasm.ts`) computes the Hamming distance of the query's first half to every code's first half (32 bytes
 *    per customer instead of 2 KiB of float32) and a histogram of the distances, which gives the threshold that keeps
 *    the closest twentieth of the gallery (at least FIRST_PASS_MIN); for those, the second halves complete the 512-bit
 *    distances, whose histogram gives the threshold that keeps the `candidates` closest codes;
 * 2. exact re-rank: those candidates are scored with the float32 templates (a WebAssembly SIMD kernel over a memory
 *    that holds the templates, `dotKernel`), so every similarity returned is the cosine (the number a full scan
 *    gives, to about 1e-7: float32 sums).
 * The codes need no training, so add, update and remove are O(1) and the index never needs rebuilding.
 */
export interface GalleryRow {
  customerId: string;
  /** L2-normalised template: a Float32Array, or the stored BLOB (512 little-endian float32). */
  template: Float32Array | Uint8Array;
  /** How many good embeddings the template averages (the running mean's weight); 1 if absent. */
  count?: number;
}

export interface Match {
  customerId: string;
  /** Exact cosine similarity of the query to the customer's template. */
  similarity: number;
}

export interface GalleryOptions {
  /** Codes kept by the prefilter for the exact re-rank (default 50; more: higher recall, slower). */
  candidates?: number;
}

export const DEFAULT_CANDIDATES = 50;

/** Largest candidate list the re-rank reads (ties at the threshold distance are cut here). */
const MAX_CAND = 4096;

/**
 * The first pass keeps the twentieth of the gallery closest on the first 256 bits, and at least this many codes. On
 * real faces (docs/identity.md, "The prefilter on real faces") the worst of 78 same-person pairs was expected at rank
 * 14 of 20,000 on 256 bits, against the 1,000 kept; on 512 bits at rank 0.2, against the 50 candidates.
 */
const FIRST_PASS_MIN = 1000;
const FIRST_PASS_SHARE = 20;
const HALF = CODE_BYTES / 2;

/**
 * Queries scanned together by `searchBatch` (a batch's faces): each tile of codes is read from memory once for all of
 * them. In head office the codes do not stay in the cache between two visits (SQLite's pages and the templates pass
 * through it), so a scan per query read the 1.3 MB of a 20,000-customer gallery's codes from memory each time:
 * 0.15-0.2 ms a face, against 0.09 ms with the codes in the cache (docs/decisions.md, "Ingest CPU per visit, third
 * round").
 */
const GROUP = 8;
/** First halves per tile: 4,096 x 32 bytes, 128 KiB, which stay in the core's cache while the group's queries scan them. */
const TILE = 4096;

// WebAssembly memory layout: a 64 KiB header (a histogram of 513 i32 and a query code per query of a group, the
// candidate list, a code being written), then, for `cap` slots, the codes' first halves (32 bytes per slot), their
// second halves (32 bytes per slot), a distance row (u16 per slot) per query of a group, and the first pass's list of
// slots (i32 per slot).
const HIST = 0;
const HIST_BYTES = 2064;
const QUERY = GROUP * HIST_BYTES;
const CAND = QUERY + GROUP * CODE_BYTES;
const NEW_CODE = CAND + MAX_CAND * 4;
const CODES = PAGE;
/** The codes' first halves start the codes' area; their second halves follow at CODES + cap * HALF (`secondHalves`). */
const FIRST_HALVES = CODES;
if (HIST_BYTES < 513 * 4 || NEW_CODE + CODE_BYTES > CODES) throw new Error('gallery: header overflow');
// The re-rank kernel's memory: the query (512 float32), the candidate slots (i32), their similarities (f64), then
// the templates from TEMPLATES (2 KiB per slot; growing the memory keeps them where they are).
const DQUERY = 0;
const DCAND = DIM * 4;
const DOUT = DCAND + MAX_CAND * 4;
if (DOUT + MAX_CAND * 8 > TEMPLATES) throw new Error('gallery: re-rank header overflow');
/** The templates' first float32 index. */
const T0 = TEMPLATES / 4;

const coder = new SignCoder();
const scratch = new Float32Array(DIM);

export class Gallery {
  private n = 0;
  private cap = 0;
  private readonly ids: string[] = [];
  private readonly slotOf = new Map<string, number>();
  private counts = new Uint32Array(0);
  private readonly memory: WasmMemory;
  private readonly kernel: HammingExports;
  private u8!: Uint8Array;
  private i32!: Int32Array;
  /** The templates, the query and the re-rank's slots and results (server/identity/wasm.ts, `dotKernel`). */
  private readonly tmem: WasmMemory;
  private readonly dk: DotExports;
  private tf32!: Float32Array;
  private ti32!: Int32Array;
  private tf64!: Float64Array;
  private cands = DEFAULT_CANDIDATES;
  /** The normalised queries of the search under way (no allocation per search): one per query of a group. */
  private readonly queries = Array.from({ length: GROUP }, () => new Float32Array(DIM));

  constructor(options: GalleryOptions = {}) {
    this.candidates = options.candidates ?? DEFAULT_CANDIDATES;
    this.memory = newMemory(1);
    this.kernel = hammingKernel(this.memory);
    this.tmem = newMemory(1);
    this.dk = dotKernel(this.tmem);
    this.views();
    this.reserve(256);
  }

  /** Builds a gallery from stored templates (rows from the database). */
  static load(rows: Iterable<GalleryRow>, options?: GalleryOptions): Gallery {
    const g = new Gallery(options);
    if (Array.isArray(rows)) g.reserve(rows.length);
    for (const row of rows) {
      const t = row.template instanceof Float32Array ? row.template : templateView(row.template);
      g.add(row.customerId, t, row.count ?? 1);
    }
    return g;
  }

  /** Codes kept by the prefilter for the exact re-rank (1 .. 4096). */
  get candidates(): number {
    return this.cands;
  }

  set candidates(c: number) {
    this.cands = Math.max(1, Math.min(MAX_CAND, Math.floor(c)));
  }

  get size(): number {
    return this.n;
  }

  has(customerId: string): boolean {
    return this.slotOf.has(customerId);
  }

  /** A copy of the customer's template and its weight, or undefined. */
  entry(customerId: string): { template: Float32Array; count: number } | undefined {
    const s = this.slotOf.get(customerId);
    if (s === undefined) return undefined;
    const o = T0 + s * DIM;
    return { template: this.tf32.slice(o, o + DIM), count: this.counts[s]! };
  }

  /** Exact cosine similarity of `embedding` to one customer's template; undefined if not enrolled. */
  similarity(customerId: string, embedding: ArrayLike<number>): number | undefined {
    const s = this.slotOf.get(customerId);
    if (s === undefined) return undefined;
    return this.scoreOne(normalizeInto(embedding, scratch), s);
  }

  /**
   * `similarity` for a query that is already L2-normalised (the matcher's `unitCopy`): no normalising copy per call,
   * which the burst list's comparisons of every visit paid 32 times.
   */
  similarityUnit(customerId: string, unit: Float32Array): number | undefined {
    const s = this.slotOf.get(customerId);
    if (s === undefined) return undefined;
    return this.scoreOne(unit, s);
  }

  /** Adds a customer (the embedding is normalised). Throws if the customer is already in the gallery. */
  add(customerId: string, embedding: ArrayLike<number>, count = 1): void {
    if (this.slotOf.has(customerId)) throw new Error(`gallery: customer ${customerId} is already enrolled`);
    const t = normalizeInto(embedding, scratch);
    if (this.n === this.cap) this.reserve(this.cap * 2);
    const s = this.n++;
    this.ids[s] = customerId;
    this.slotOf.set(customerId, s);
    this.write(s, t, count);
  }

  /** Replaces a customer's template (e.g. the new running mean; normalised here) and optionally its weight. */
  update(customerId: string, template: ArrayLike<number>, count?: number): void {
    const s = this.slotOf.get(customerId);
    if (s === undefined) throw new Error(`gallery: customer ${customerId} is not enrolled`);
    this.write(s, normalizeInto(template, scratch), count ?? this.counts[s]!);
  }

  /**
   * Puts back a template exactly as `entry` copied it (already normalised, so not normalised again: the same bits):
   * the undo of an update whose transaction failed (Matcher.rollback).
   */
  restore(customerId: string, template: Float32Array, count: number): void {
    const s = this.slotOf.get(customerId);
    if (s === undefined) throw new Error(`gallery: customer ${customerId} is not enrolled`);
    this.write(s, template, count);
  }

  /** Removes a customer (erasure, merge): never returned by a search again. False if it was not there. */
  remove(customerId: string): boolean {
    const s = this.slotOf.get(customerId);
    if (s === undefined) return false;
    const last = --this.n;
    this.slotOf.delete(customerId);
    if (s !== last) {
      // Keep slots dense: the last customer moves into the hole.
      const moved = this.ids[last]!;
      this.ids[s] = moved;
      this.slotOf.set(moved, s);
      this.tf32.copyWithin(T0 + s * DIM, T0 + last * DIM, T0 + (last + 1) * DIM);
      this.counts[s] = this.counts[last]!;
      for (const half of [FIRST_HALVES, this.secondHalves()]) this.u8.copyWithin(half + s * HALF, half + last * HALF, half + (last + 1) * HALF);
    }
    this.ids.length = last;
    // Wipe the vacated template: erased faces should not linger in memory.
    this.tf32.fill(0, T0 + last * DIM, T0 + (last + 1) * DIM);
    for (const half of [FIRST_HALVES, this.secondHalves()]) this.u8.fill(0, half + last * HALF, half + (last + 1) * HALF);
    return true;
  }

  /** The k customers most similar to `embedding`, best first, with exact cosine similarities. */
  search(embedding: ArrayLike<number>, k = 1): Match[] {
    return this.searchBatch([embedding], k)[0]!;
  }

  /**
   * `search` for many embeddings (an ingest batch's faces), with the same answers. Up to GROUP of them share each
   * pass over the codes: tile by tile, every query of the group scans the tile while it is in the cache.
   */
  searchBatch(embeddings: readonly ArrayLike<number>[], k = 1): Match[][] {
    const out: Match[][] = [];
    for (let from = 0; from < embeddings.length; from += GROUP) {
      const group = embeddings.slice(from, from + GROUP);
      const qs = group.map((e, j) => normalizeInto(e, this.queries[j]!));
      if (k < 1) {
        for (const _ of qs) out.push([]);
        continue;
      }
      if (this.n <= Math.max(k, this.cands)) {
        for (const q of qs) out.push(this.scanExact(q, k));
        continue;
      }
      qs.forEach((q, j) => coder.encode(q, 0, this.u8, QUERY + j * CODE_BYTES));
      this.i32.fill(0, HIST >> 2, (HIST + qs.length * HIST_BYTES) >> 2);
      for (let t = 0; t < this.n; t += TILE) {
        const c = Math.min(TILE, this.n - t);
        for (let j = 0; j < qs.length; j++) this.kernel.scanHalf(FIRST_HALVES + t * HALF, c, QUERY + j * CODE_BYTES, this.outRow(j) + t * 2, HIST + j * HIST_BYTES);
      }
      qs.forEach((q, j) => out.push(this.rerank(q, k, j)));
    }
    return out;
  }

  /** Reference full scan in float32 (O(n)): for tests and benchmarks. */
  searchExact(embedding: ArrayLike<number>, k = 1): Match[] {
    const q = normalizeInto(embedding, this.queries[0]!);
    return k < 1 ? [] : this.scanExact(q, k);
  }

  /** Bytes held in typed arrays and WebAssembly memory (excludes the id strings and the id map). */
  get bytes(): number {
    return this.tmem.buffer.byteLength + this.counts.byteLength + this.memory.buffer.byteLength;
  }

  /**
   * The rest of query `j` of a group: the first pass's histogram gives its cut-off and its distance row the slots
   * kept; their second halves complete their distances, whose histogram gives the candidates' cut-off; then the re-rank.
   */
  private rerank(q: Float32Array, k: number, j: number): Match[] {
    const want = Math.max(k, this.cands);
    const hist = HIST + j * HIST_BYTES;
    const row = this.outRow(j);
    const list = this.listArea();
    const keep = Math.max(want, FIRST_PASS_MIN, Math.ceil(this.n / FIRST_PASS_SHARE));
    const kept = this.kernel.collect(row, this.n, cutoff(this.i32, hist >> 2, keep), list, this.n);
    this.i32.fill(0, hist >> 2, (hist + HIST_BYTES) >> 2);
    this.kernel.finish(list, kept, this.secondHalves(), QUERY + j * CODE_BYTES + HALF, row, hist);
    const c = this.kernel.collectListed(list, kept, row, cutoff(this.i32, hist >> 2, want), CAND, MAX_CAND);
    this.ti32.set(this.i32.subarray(CAND >> 2, (CAND >> 2) + c), DCAND >> 2);
    const top = new TopK(k);
    this.score(q, c, top);
    return top.matches(this.ids);
  }

  private scanExact(q: Float32Array, k: number): Match[] {
    const top = new TopK(k);
    for (let from = 0; from < this.n; from += MAX_CAND) {
      const c = Math.min(MAX_CAND, this.n - from);
      for (let i = 0; i < c; i++) this.ti32[(DCAND >> 2) + i] = from + i;
      this.score(q, c, top);
    }
    return top.matches(this.ids);
  }

  /** Scores the `c` slots in the kernel's candidate list against `q` and offers them to `top`. */
  private score(q: Float32Array, c: number, top: TopK): void {
    this.tf32.set(q, DQUERY >> 2);
    this.dk.dots(DQUERY, DCAND, c, DOUT);
    for (let i = 0; i < c; i++) top.offer(this.ti32[(DCAND >> 2) + i]!, this.tf64[(DOUT >> 3) + i]!);
  }

  /** One slot's similarity, by the re-rank kernel: the same arithmetic as a search's, so the same number. */
  private scoreOne(q: Float32Array, s: number): number {
    this.tf32.set(q, DQUERY >> 2);
    this.ti32[DCAND >> 2] = s;
    this.dk.dots(DQUERY, DCAND, 1, DOUT);
    return this.tf64[DOUT >> 3]!;
  }

  private write(s: number, t: Float32Array, count: number): void {
    const o = T0 + s * DIM;
    this.tf32.set(t, o);
    this.counts[s] = count;
    coder.encode(this.tf32, o, this.u8, NEW_CODE);
    this.u8.copyWithin(FIRST_HALVES + s * HALF, NEW_CODE, NEW_CODE + HALF);
    this.u8.copyWithin(this.secondHalves() + s * HALF, NEW_CODE + HALF, NEW_CODE + CODE_BYTES);
  }

  private secondHalves(cap = this.cap): number {
    return CODES + cap * HALF;
  }

  /** Where query `j` of a group writes its distances. */
  private outRow(j: number): number {
    return CODES + this.cap * CODE_BYTES + j * this.cap * 2;
  }

  /** Where the first pass lists the slots it keeps. */
  private listArea(): number {
    return this.outRow(GROUP);
  }

  /** Makes room for `cap` customers in the weights, codes, distances and templates. */
  private reserve(cap: number): void {
    if (cap <= this.cap) return;
    cap = Math.max(cap, 256);
    const counts = new Uint32Array(cap);
    counts.set(this.counts);
    this.counts = counts;
    const bytes = CODES + cap * CODE_BYTES + GROUP * cap * 2 + cap * 4;
    const pages = Math.ceil(bytes / PAGE) - this.memory.buffer.byteLength / PAGE;
    if (pages > 0) this.memory.grow(pages);
    const tpages = Math.ceil((TEMPLATES + cap * DIM * 4) / PAGE) - this.tmem.buffer.byteLength / PAGE;
    if (tpages > 0) this.tmem.grow(tpages);
    this.views();
    // The second halves follow the first halves' area, which grew: move them, and clear what they leave behind.
    const from = this.secondHalves(this.cap);
    const to = this.secondHalves(cap);
    this.u8.copyWithin(to, from, from + this.n * HALF);
    this.u8.fill(0, FIRST_HALVES + this.n * HALF, to);
    this.cap = cap;
  }

  private views(): void {
    this.u8 = new Uint8Array(this.memory.buffer);
    this.i32 = new Int32Array(this.memory.buffer);
    this.tf32 = new Float32Array(this.tmem.buffer);
    this.ti32 = new Int32Array(this.tmem.buffer);
    this.tf64 = new Float64Array(this.tmem.buffer);
  }
}

/** The distance at which a histogram (`i32[h .. h + 513)`) has counted `want` codes (512 if it never does). */
function cutoff(i32: Int32Array, h: number, want: number): number {
  let thr = 0;
  for (let seen = 0; thr < 512; thr++) {
    seen += i32[h + thr]!;
    if (seen >= want) break;
  }
  return thr;
}

/** Builds a company's gallery from its stored templates. */
export function loadCompany(rows: Iterable<GalleryRow>, options?: GalleryOptions): Gallery {
  return Gallery.load(rows, options);
}

/** The k best (slot, similarity) pairs seen, kept sorted; ties keep the lower slot. */
class TopK {
  private readonly slots: number[] = [];
  private readonly sims: number[] = [];

  constructor(private readonly k: number) {}

  offer(slot: number, sim: number): void {
    const n = this.sims.length;
    if (n === this.k && sim <= this.sims[n - 1]!) return;
    let i = n === this.k ? n - 1 : n;
    while (i > 0 && this.sims[i - 1]! < sim) {
      this.sims[i] = this.sims[i - 1]!;
      this.slots[i] = this.slots[i - 1]!;
      i--;
    }
    this.sims[i] = sim;
    this.slots[i] = slot;
  }

  matches(ids: readonly string[]): Match[] {
    return this.slots.map((s, i) => ({ customerId: ids[s]!, similarity: this.sims[i]! }));
  }
}
