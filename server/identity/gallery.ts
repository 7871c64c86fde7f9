import { CODE_BYTES, SignCoder } from './signcode.js';
import { DIM, dot, normalizeInto, templateView } from './vector.js';
import { PAGE, hammingKernel, newMemory, type HammingExports, type WasmMemory } from './wasm.js';

/**
 * One company's face gallery, in memory: ranks customer templates by cosine similarity to an embedding.
 * Thresholds are the caller's business (see `matcher.ts`); the gallery only ranks.
 *
 * Search is a two-stage scan (measurements in docs/benchmarks.md, reasoning in docs/identity.md):
 * 1. prefilter: every template has a 512-bit sign code (`signcode.ts`); a WebAssembly kernel (`wasm.ts`) computes
 *    the Hamming distance of the query's code to all codes (64 bytes per customer instead of 2 KiB of float32) and
 *    a histogram of the distances, which gives the distance threshold that keeps the `candidates` closest codes;
 * 2. exact re-rank: those candidates are scored with the float32 templates, so every similarity returned is the
 *    exact cosine (the same number a full scan gives).
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
  /** Codes kept by the prefilter for the exact re-rank (default 100; more: higher recall, slower). */
  candidates?: number;
}

export const DEFAULT_CANDIDATES = 100;

/** Templates per float32 chunk (2 MiB): growing never copies the whole gallery. */
const CHUNK = 1024;
/** Largest candidate list the re-rank reads (ties at the threshold distance are cut here). */
const MAX_CAND = 4096;

// WebAssembly memory layout: a 64 KiB header (histogram of 513 i32, query code, candidate list), the codes
// (64 bytes per slot), then the distances of the last scan (u16 per slot).
const HIST = 0;
const QUERY = 4096;
const CAND = QUERY + CODE_BYTES;
const CODES = PAGE;
if (CAND + MAX_CAND * 4 > CODES) throw new Error('gallery: header overflow');

const coder = new SignCoder();
const scratch = new Float32Array(DIM);

export class Gallery {
  private n = 0;
  private cap = 0;
  private readonly ids: string[] = [];
  private readonly slotOf = new Map<string, number>();
  private readonly chunks: Float32Array[] = [];
  private counts = new Uint32Array(0);
  private readonly memory: WasmMemory;
  private readonly kernel: HammingExports;
  private u8!: Uint8Array;
  private i32!: Int32Array;
  private cands = DEFAULT_CANDIDATES;
  /** The normalised query of the search under way (no allocation per search). */
  private readonly query = new Float32Array(DIM);

  constructor(options: GalleryOptions = {}) {
    this.candidates = options.candidates ?? DEFAULT_CANDIDATES;
    this.memory = newMemory(1);
    this.kernel = hammingKernel(this.memory);
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
    const o = (s % CHUNK) * DIM;
    return { template: this.chunks[Math.floor(s / CHUNK)]!.slice(o, o + DIM), count: this.counts[s]! };
  }

  /** Exact cosine similarity of `embedding` to one customer's template; undefined if not enrolled. */
  similarity(customerId: string, embedding: ArrayLike<number>): number | undefined {
    const s = this.slotOf.get(customerId);
    if (s === undefined) return undefined;
    return dot(normalizeInto(embedding, scratch), this.chunks[Math.floor(s / CHUNK)]!, (s % CHUNK) * DIM);
  }

  /**
   * `similarity` for a query that is already L2-normalised (the matcher's `unitCopy`): no normalising copy per call,
   * which the burst list's comparisons of every visit paid 32 times.
   */
  similarityUnit(customerId: string, unit: Float32Array): number | undefined {
    const s = this.slotOf.get(customerId);
    if (s === undefined) return undefined;
    return dot(unit, this.chunks[Math.floor(s / CHUNK)]!, (s % CHUNK) * DIM);
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
      const from = this.chunks[Math.floor(last / CHUNK)]!;
      const fo = (last % CHUNK) * DIM;
      this.chunks[Math.floor(s / CHUNK)]!.set(from.subarray(fo, fo + DIM), (s % CHUNK) * DIM);
      this.counts[s] = this.counts[last]!;
      this.u8.copyWithin(CODES + s * CODE_BYTES, CODES + last * CODE_BYTES, CODES + (last + 1) * CODE_BYTES);
    }
    this.ids.length = last;
    // Wipe the vacated template: erased faces should not linger in memory.
    const lc = this.chunks[Math.floor(last / CHUNK)]!;
    lc.fill(0, (last % CHUNK) * DIM, (last % CHUNK + 1) * DIM);
    this.u8.fill(0, CODES + last * CODE_BYTES, CODES + (last + 1) * CODE_BYTES);
    return true;
  }

  /** The k customers most similar to `embedding`, best first, with exact cosine similarities. */
  search(embedding: ArrayLike<number>, k = 1): Match[] {
    const q = normalizeInto(embedding, this.query);
    if (k < 1) return [];
    if (this.n <= Math.max(k, this.cands)) return this.scanExact(q, k);
    coder.encode(q, 0, this.u8, QUERY);
    this.i32.fill(0, HIST >> 2, (HIST >> 2) + 513);
    this.kernel.scan(CODES, this.n, QUERY, this.outRow(), HIST);
    return this.rerank(q, k);
  }

  /**
   * `search` for many embeddings (an ingest burst). One query at a time: the scan is compute-bound (popcount),
   * not memory-bound, so scanning a tile of codes for several queries at once measured slower (docs/identity.md).
   */
  searchBatch(embeddings: readonly ArrayLike<number>[], k = 1): Match[][] {
    return embeddings.map((e) => this.search(e, k));
  }

  /** Reference full scan in float32 (O(n)): for tests and benchmarks. */
  searchExact(embedding: ArrayLike<number>, k = 1): Match[] {
    const q = normalizeInto(embedding, this.query);
    return k < 1 ? [] : this.scanExact(q, k);
  }

  /** Bytes held in typed arrays and WebAssembly memory (excludes the id strings and the id map). */
  get bytes(): number {
    return this.chunks.reduce((s, c) => s + c.byteLength, 0) + this.counts.byteLength + this.memory.buffer.byteLength;
  }

  private rerank(q: Float32Array, k: number): Match[] {
    const want = Math.max(k, this.cands);
    const h = HIST >> 2;
    let thr = 0;
    for (let seen = 0; thr < 512; thr++) {
      seen += this.i32[h + thr]!;
      if (seen >= want) break;
    }
    const c = this.kernel.collect(this.outRow(), this.n, thr, CAND, MAX_CAND);
    const top = new TopK(k);
    for (let i = 0; i < c; i++) {
      const s = this.i32[(CAND >> 2) + i]!;
      top.offer(s, dot(q, this.chunks[Math.floor(s / CHUNK)]!, (s % CHUNK) * DIM));
    }
    return top.matches(this.ids);
  }

  private scanExact(q: Float32Array, k: number): Match[] {
    const top = new TopK(k);
    for (let s = 0; s < this.n; s++) top.offer(s, dot(q, this.chunks[Math.floor(s / CHUNK)]!, (s % CHUNK) * DIM));
    return top.matches(this.ids);
  }

  private write(s: number, t: Float32Array, count: number): void {
    const chunk = this.chunkFor(s);
    const o = (s % CHUNK) * DIM;
    chunk.set(t, o);
    this.counts[s] = count;
    coder.encode(chunk, o, this.u8, CODES + s * CODE_BYTES);
  }

  private outRow(): number {
    return CODES + this.cap * CODE_BYTES;
  }

  /**
   * The float32 chunk holding slot `s`, allocated on first use: chunks are added one at a time as slots fill (no
   * slack beyond the last chunk), and the first chunk grows by doubling so that a small company stays small.
   */
  private chunkFor(s: number): Float32Array {
    const i = Math.floor(s / CHUNK);
    const have = this.chunks[i];
    const need = ((s % CHUNK) + 1) * DIM;
    if (have && have.length >= need) return have;
    let size = Math.max(64 * DIM, have?.length ?? 0);
    while (size < need) size *= 2;
    const next = new Float32Array(Math.min(CHUNK * DIM, size));
    if (have) next.set(have);
    this.chunks[i] = next;
    return next;
  }

  /** Makes room for `cap` customers in the weights, codes and distances (float32 chunks grow in `chunkFor`). */
  private reserve(cap: number): void {
    if (cap <= this.cap) return;
    cap = Math.max(cap, 256);
    const counts = new Uint32Array(cap);
    counts.set(this.counts);
    this.counts = counts;
    const bytes = CODES + cap * CODE_BYTES + cap * 2;
    const pages = Math.ceil(bytes / PAGE) - this.memory.buffer.byteLength / PAGE;
    if (pages > 0) {
      this.memory.grow(pages);
      this.views();
    }
    this.cap = cap;
  }

  private views(): void {
    this.u8 = new Uint8Array(this.memory.buffer);
    this.i32 = new Int32Array(this.memory.buffer);
  }
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
