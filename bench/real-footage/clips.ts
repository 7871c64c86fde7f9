/**
 * The real-footage evaluation set (issue 25): bench/real-footage/clips.json (what each clip is, where it came from,
 * its licence and counting line) and its hand labels (bench/real-footage/labels/<id>.{a,b}.json, one file per
 * labeller, and <id>.json once the two are reconciled). Read by the `door-real` benchmark, test/door-real.test.ts,
 * sheets.ts and compare-labels.ts, from the source tree (tsx) or from dist/ alike.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The repository's root: the nearest folder above this file with a package.json (works from bench/ and dist/bench/). */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('no package.json above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

const Point = z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]);

export const RealClipSchema = z.object({
  id: z.string().regex(/^[a-z0-9-]+$/),
  source: z.object({ repo: z.string(), path: z.string(), commit: z.string().regex(/^[0-9a-f]{40}$/), url: z.string() }),
  licence: z.object({ name: z.string(), url: z.string(), attribution: z.string() }),
  shows: z.string(),
  cut: z.object({ command: z.string(), start_s: z.number(), end_s: z.number() }),
  width: z.number().int(),
  height: z.number().int(),
  fps: z.number(),
  duration_s: z.number(),
  /** Same semantics as tuning.line (docs/body-counting.md). */
  line: z.object({ a: Point, b: Point, inside: z.enum(['left', 'right']) }),
  line_notes: z.string(),
  /** The committed clip, relative to the repository's root. */
  file: z.string(),
});
export type RealClip = z.infer<typeof RealClipSchema>;

export const CrossingLabel = z.object({
  t: z.number().min(0),
  direction: z.enum(['in', 'out']),
  who: z.string(),
});
export type CrossingLabel = z.infer<typeof CrossingLabel>;

export const LabelFile = z.object({
  clip: z.string(),
  labeller: z.string(),
  crossings: z.array(CrossingLabel),
  notes: z.string().optional(),
});
export type LabelFile = z.infer<typeof LabelFile>;

export const realDir = () => path.join(repoRoot(), 'bench/real-footage');

/** Every clip of clips.json, `file` made absolute. */
export function loadClips(): RealClip[] {
  const raw = JSON.parse(fs.readFileSync(path.join(realDir(), 'clips.json'), 'utf8')) as unknown;
  return z
    .object({ clips: z.array(RealClipSchema) })
    .parse(raw)
    .clips.map((c) => ({ ...c, file: path.join(repoRoot(), c.file) }));
}

/** One labeller's file (`a`, `b`) or, with no labeller, the reconciled one; undefined when it does not exist. */
export function readLabels(id: string, labeller?: string): LabelFile | undefined {
  const file = path.join(realDir(), 'labels', labeller ? `${id}.${labeller}.json` : `${id}.json`);
  if (!fs.existsSync(file)) return undefined;
  return LabelFile.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
}

/** The truth for a clip: the reconciled labels if there are any, else labeller a's; `which` says which was read. */
export function truthFor(id: string): { labels: LabelFile; which: string } | undefined {
  const reconciled = readLabels(id);
  if (reconciled) return { labels: reconciled, which: `${id}.json (reconciled)` };
  const a = readLabels(id, 'a');
  return a ? { labels: a, which: `${id}.a.json (one labelling, not yet reconciled)` } : undefined;
}

export interface Timed {
  t: number;
  direction: 'in' | 'out';
}

/**
 * One-to-one matching of two lists of crossings: a pair is the same direction within `tolerance` seconds; the
 * most pairs, then the least total time difference (per direction, both sorted by time: the optimal assignment on
 * a line is found by dynamic programming over the two sorted lists).
 */
export function matchCrossings<A extends Timed, B extends Timed>(as: A[], bs: B[], tolerance = 1.5): { pairs: [A, B][]; onlyA: A[]; onlyB: B[] } {
  const pairs: [A, B][] = [];
  const onlyA: A[] = [];
  const onlyB: B[] = [];
  for (const dir of ['in', 'out'] as const) {
    const x = as.filter((c) => c.direction === dir).sort((p, q) => p.t - q.t);
    const y = bs.filter((c) => c.direction === dir).sort((p, q) => p.t - q.t);
    // best[i][j]: [pairs, -cost] over x[i..], y[j..]; lexicographic max.
    const n = x.length;
    const m = y.length;
    const best: [number, number][][] = Array.from({ length: n + 1 }, () => Array.from({ length: m + 1 }, () => [0, 0] as [number, number]));
    const better = (p: [number, number], q: [number, number]) => p[0] > q[0] || (p[0] === q[0] && p[1] > q[1]);
    for (let i = n; i >= 0; i--) {
      for (let j = m; j >= 0; j--) {
        if (i === n || j === m) continue;
        let b: [number, number] = best[i + 1]![j]!;
        if (better(best[i]![j + 1]!, b)) b = best[i]![j + 1]!;
        const d = Math.abs(x[i]!.t - y[j]!.t);
        if (d <= tolerance) {
          const take: [number, number] = [best[i + 1]![j + 1]![0] + 1, best[i + 1]![j + 1]![1] - d];
          if (better(take, b)) b = take;
        }
        best[i]![j] = b;
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      const d = Math.abs(x[i]!.t - y[j]!.t);
      const here = best[i]![j]!;
      const take = best[i + 1]![j + 1]!;
      if (d <= tolerance && here[0] === take[0] + 1 && Math.abs(here[1] - (take[1] - d)) < 1e-9) {
        pairs.push([x[i]!, y[j]!]);
        i++;
        j++;
      } else if (best[i + 1]![j]![0] === here[0] && Math.abs(best[i + 1]![j]![1] - here[1]) < 1e-9) {
        onlyA.push(x[i]!);
        i++;
      } else {
        onlyB.push(y[j]!);
        j++;
      }
    }
    for (; i < n; i++) onlyA.push(x[i]!);
    for (; j < m; j++) onlyB.push(y[j]!);
  }
  return { pairs, onlyA, onlyB };
}
