import { describe, expect, it } from 'vitest';
import { Gallery, loadCompany } from './gallery.js';
import { CODE_BYTES, SignCoder } from './signcode.js';
import { Faces } from './synthetic.js';
import { DIM, templateFromBlob, templateToBlob, unitCopy } from './vector.js';
import { PAGE, hammingKernel, newMemory } from './wasm.js';

const row = (m: Float32Array, i: number) => m.subarray(i * DIM, (i + 1) * DIM);

function build(n: number, seed = 1) {
  const faces = new Faces(seed);
  const ids = faces.identities(n);
  const gallery = loadCompany(Array.from({ length: n }, (_, i) => ({ customerId: `c${i}`, template: row(ids, i) })));
  return { faces, ids, gallery };
}

function popcount8(x: number): number {
  let c = 0;
  for (; x; x &= x - 1) c++;
  return c;
}

describe('Hamming kernel', () => {
  it('computes the same distances and histogram as a plain loop, in both variants', () => {
    const n = 1000;
    const memory = newMemory(4);
    const k = hammingKernel(memory);
    const u8 = new Uint8Array(memory.buffer);
    const faces = new Faces(3);
    for (let i = 0; i < (n + 1) * CODE_BYTES; i++) u8[PAGE + i] = faces.rng.u32() & 0xff;
    const codes = PAGE + CODE_BYTES;
    const query = PAGE;
    const out = PAGE + (n + 1) * CODE_BYTES;
    const hist = 1024;
    k.scan(codes, n, query, out, hist);
    const d = new Uint16Array(memory.buffer, out, n).slice();
    const h = new Int32Array(memory.buffer, hist, 513).slice();
    const expected = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      for (let b = 0; b < CODE_BYTES; b++) expected[i]! += popcount8(u8[codes + i * CODE_BYTES + b]! ^ u8[query + b]!);
    }
    expect(Array.from(d)).toEqual(Array.from(expected));
    expect(h.reduce((a, b) => a + b, 0)).toBe(n);
    for (let v = 0; v <= 512; v++) expect(h[v]).toBe(expected.filter((x) => x === v).length);

    new Uint16Array(memory.buffer, out, n).fill(0);
    k.scanSimd(codes, n, query, out, hist + 4096);
    expect(Array.from(new Uint16Array(memory.buffer, out, n))).toEqual(Array.from(expected));

    const thr = 250;
    const cand = 8192;
    const c = k.collect(out, n, thr, cand, 5000);
    const want = [...expected.keys()].filter((i) => expected[i]! <= thr);
    expect(Array.from(new Int32Array(memory.buffer, cand, c))).toEqual(want);
    expect(k.collect(out, n, thr, cand, 3)).toBe(Math.min(3, want.length));
    expect(Array.from(new Int32Array(memory.buffer, cand, 3))).toEqual(want.slice(0, 3));

    // Eight slots at a time, then the rest one by one: every length around a multiple of eight, every threshold
    // between none and all kept, and a cap that falls inside a group of eight.
    for (const len of [0, 1, 7, 8, 9, 15, 16, 17, 999]) {
      for (const t of [0, 230, 250, 256, 270, 512]) {
        const all = [...expected.keys()].filter((i) => i < len && expected[i]! <= t);
        const got = k.collect(out, len, t, cand, 5000);
        expect(Array.from(new Int32Array(memory.buffer, cand, got))).toEqual(all);
        for (const cap of [1, 5, 13]) {
          const part = k.collect(out, len, t, cand, cap);
          expect(Array.from(new Int32Array(memory.buffer, cand, part))).toEqual(all.slice(0, cap));
        }
      }
    }
  });

  it('the two-pass functions: first halves scanned, the listed slots completed to 512 bits, the listed collected', () => {
    const n = 1000;
    const half = CODE_BYTES / 2;
    const memory = newMemory(4);
    const k = hammingKernel(memory);
    const u8 = new Uint8Array(memory.buffer);
    const faces = new Faces(4);
    // The query's 64 bytes, then every code's first half, then every code's second half.
    const query = PAGE;
    const first = PAGE + CODE_BYTES;
    const second = first + n * half;
    for (let i = query; i < second + n * half; i++) u8[i] = faces.rng.u32() & 0xff;
    const out = second + n * half;
    const list = out + n * 2;
    const cand = list + n * 4;
    const hist = 1024;
    const distance = (i: number, from: number, to: number) => {
      let d = 0;
      for (let b = from; b < to; b++) d += popcount8(u8[(b < half ? first : second) + i * half + (b % half)]! ^ u8[query + b]!);
      return d;
    };
    k.scanHalf(first, n, query, out, hist);
    const d1 = Array.from({ length: n }, (_, i) => distance(i, 0, half));
    expect(Array.from(new Uint16Array(memory.buffer, out, n))).toEqual(d1);
    const h1 = new Int32Array(memory.buffer, hist, 513);
    for (let v = 0; v <= 512; v++) expect(h1[v]).toBe(d1.filter((x) => x === v).length);

    // Every third slot listed, in descending order (the list's order is the kernel's order, whatever it is).
    const listed = Array.from({ length: n }, (_, i) => n - 1 - i).filter((s) => s % 3 === 0);
    new Int32Array(memory.buffer, list, listed.length).set(listed);
    new Int32Array(memory.buffer, hist, 513).fill(0);
    k.finish(list, listed.length, second, query + half, out, hist);
    const d = new Uint16Array(memory.buffer, out, n);
    for (let i = 0; i < n; i++) expect(d[i]).toBe(i % 3 === 0 ? distance(i, 0, CODE_BYTES) : d1[i]);
    const h2 = new Int32Array(memory.buffer, hist, 513);
    for (let v = 0; v <= 512; v++) expect(h2[v]).toBe(listed.filter((s) => distance(s, 0, CODE_BYTES) === v).length);

    const thr = 250;
    const want = listed.filter((s) => distance(s, 0, CODE_BYTES) <= thr);
    const c = k.collectListed(list, listed.length, out, thr, cand, n);
    expect(Array.from(new Int32Array(memory.buffer, cand, c))).toEqual(want);
    expect(k.collectListed(list, listed.length, out, thr, cand, 2)).toBe(Math.min(2, want.length));
  });

  it('sign codes of a vector and of the same vector scaled agree; near vectors are closer in Hamming', () => {
    const coder = new SignCoder();
    const faces = new Faces(4);
    const x = faces.identity();
    const near = faces.sighting(x, 0.8);
    const far = faces.identity();
    const code = (v: Float32Array) => {
      const out = new Uint8Array(CODE_BYTES);
      coder.encode(v, 0, out, 0);
      return out;
    };
    const dist = (a: Uint8Array, b: Uint8Array) => a.reduce((s, v, i) => s + popcount8(v ^ b[i]!), 0);
    const cx = code(x);
    expect(dist(cx, code(x.map((v) => v * 3)))).toBe(0);
    expect(dist(cx, code(near))).toBeLessThan(dist(cx, code(far)));
    // angle 36.9 degrees -> about 512 * 0.205 = 105 bits; unrelated -> about 256
    expect(dist(cx, code(near))).toBeLessThan(150);
    expect(dist(cx, code(far))).toBeGreaterThan(200);
  });
});

describe('Gallery search', () => {
  const { faces, ids, gallery } = build(20_000);
  const queries: Float32Array[] = [];
  const truth: string[] = [];
  for (let j = 0; j < 200; j++) {
    const i = Math.floor(faces.rng.uniform() * 20_000);
    truth.push(`c${i}`);
    queries.push(faces.sightingIn(ids, 0.5, 0.8, i));
  }

  it('re-ranked similarities are exact: the same numbers as a full float32 scan and as a plain dot product', () => {
    for (const q of queries.slice(0, 20)) {
      const got = gallery.search(q, 5);
      const exact = gallery.searchExact(q, 5);
      // The best match is the exact best, with the same similarity; every returned similarity is exact (ranks 2..5
      // are strangers at noise level, which the prefilter does not promise to rank like a full scan).
      expect(got[0]).toEqual(exact[0]);
      for (const m of got) expect(m.similarity).toBe(gallery.similarity(m.customerId, q));
      const u = unitCopy(q);
      const i = Number(got[0]!.customerId.slice(1));
      let d = 0;
      for (let k = 0; k < DIM; k++) d += u[k]! * ids[i * DIM + k]!;
      expect(got[0]!.similarity).toBeCloseTo(d, 6);
      expect(got.map((m) => m.similarity)).toEqual([...got.map((m) => m.similarity)].sort((a, b) => b - a));
    }
  });

  it('recall@1 on a synthetic 20k gallery is at least 99 % against an exact scan', () => {
    let agree = 0;
    let right = 0;
    queries.forEach((q, j) => {
      const got = gallery.search(q, 1)[0]!;
      if (got.customerId === truth[j]) right++;
      // the exact scan is the slow part: every other query
      if (j % 2 === 0 && got.customerId === gallery.searchExact(q, 1)[0]!.customerId) agree++;
    });
    expect(agree / (queries.length / 2)).toBeGreaterThanOrEqual(0.99);
    expect(right / queries.length).toBeGreaterThanOrEqual(0.99);
  });

  it('batched search returns exactly what single searches return', () => {
    const qs = queries.slice(0, 21);
    expect(gallery.searchBatch(qs, 3)).toEqual(qs.map((q) => gallery.search(q, 3)));
    expect(gallery.searchBatch([], 1)).toEqual([]);
  });

  it('a face never enrolled finds only low similarities', () => {
    const stranger = faces.identity();
    expect(gallery.search(stranger, 1)[0]!.similarity).toBeLessThan(0.3);
  });
});

describe('Gallery maintenance', () => {
  it('add, update and remove stay consistent with a plain model (removed never returned), across growth', () => {
    const faces = new Faces(9);
    const g = new Gallery({ candidates: 8 });
    const model = new Map<string, Float32Array>();
    let next = 0;
    const check = () => {
      expect(g.size).toBe(model.size);
      let wrong = 0;
      for (const [id, t] of model) {
        const u = unitCopy(t);
        const e = g.entry(id);
        if (!g.has(id) || !e || e.template.some((v, i) => v !== u[i])) wrong++;
        const best = g.search(t, 1)[0]!;
        if (best.customerId !== id || Math.abs(best.similarity - 1) > 1e-5) wrong++;
      }
      expect(wrong).toBe(0);
    };
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 500; i++) {
        const id = `c${next++}`;
        const t = faces.identity();
        g.add(id, t);
        model.set(id, t);
      }
      const live = [...model.keys()];
      // update a tenth, remove a quarter (including the last slots and the first)
      for (let i = 0; i < live.length; i += 10) {
        const t = faces.identity();
        g.update(live[i]!, t, 7);
        model.set(live[i]!, t);
        expect(g.entry(live[i]!)!.count).toBe(7);
      }
      const removed = live.filter((_, i) => i % 4 === round % 4 || i === live.length - 1);
      let returned = 0;
      removed.forEach((id, i) => {
        const t = model.get(id)!;
        expect(g.remove(id)).toBe(true);
        model.delete(id);
        if (g.has(id) || g.search(t, 5).some((m) => m.customerId === id)) returned++;
        if (i % 8 === 0 && g.searchExact(t, 5).some((m) => m.customerId === id)) returned++;
      });
      expect(returned).toBe(0);
      expect(g.remove(removed[0]!)).toBe(false);
      check();
    }
  });

  it('refuses a duplicate add, an update of a stranger and malformed embeddings', () => {
    const g = new Gallery();
    const t = new Faces(2).identity();
    g.add('a', t);
    expect(() => g.add('a', t)).toThrow(/already enrolled/);
    expect(() => g.update('b', t)).toThrow(/not enrolled/);
    expect(() => g.add('c', new Float32Array(128))).toThrow(/512 values/);
    expect(() => g.add('c', new Float32Array(DIM))).toThrow(/all zeros/);
    expect(() => g.search(new Float32Array(DIM).fill(Number.NaN))).toThrow(/non-finite/);
    expect(new Gallery().search(t, 3)).toEqual([]);
    expect(g.search(t, 0)).toEqual([]);
  });

  it('loads a company from stored BLOBs (unaligned Buffers) and finds the same customers', () => {
    const faces = new Faces(5);
    const ids = faces.identities(500);
    const blobs = Array.from({ length: 500 }, (_, i) => {
      const b = templateToBlob(row(ids, i));
      const unaligned = Buffer.alloc(b.length + 1);
      b.copy(unaligned, 1);
      return { customerId: `c${i}`, template: unaligned.subarray(1), count: i + 1 };
    });
    const g = Gallery.load(blobs);
    expect(g.size).toBe(500);
    expect(g.entry('c42')!.count).toBe(43);
    expect(Array.from(templateFromBlob(blobs[42]!.template))).toEqual(Array.from(row(ids, 42)));
    const q = faces.sighting(ids, 0.6, 42);
    expect(g.search(q, 1)[0]!.customerId).toBe('c42');
    expect(() => templateFromBlob(new Uint8Array(100))).toThrow(/2048 bytes/);
  });
});
