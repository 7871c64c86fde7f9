/**
 * Compares two hand labellings of the real clips (bench/real-footage/LABELLING.md):
 *
 *   npx tsx bench/real-footage/compare-labels.ts [clip id ...] [--a a] [--b b] [--tolerance 1.5]
 *
 * For every clip of clips.json (or those named) that has both labels/<id>.<a>.json and labels/<id>.<b>.json: the
 * crossings both labellers marked (same direction within the tolerance, matched one-to-one, most pairs then least
 * total time difference) and every disagreement: a crossing only one of them marked, with its time, direction and
 * who. Exits 1 when any clip has a disagreement (or a label file is missing for a clip that has the other), else 0.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadClips, matchCrossings, readLabels, type CrossingLabel } from './clips.js';

export interface Comparison {
  clip: string;
  agreed: [CrossingLabel, CrossingLabel][];
  onlyA: CrossingLabel[];
  onlyB: CrossingLabel[];
}

export function compare(clip: string, a: CrossingLabel[], b: CrossingLabel[], tolerance = 1.5): Comparison {
  const { pairs, onlyA, onlyB } = matchCrossings(a, b, tolerance);
  const byT = <T extends { t: number }>(xs: T[]) => [...xs].sort((p, q) => p.t - q.t);
  return { clip, agreed: pairs.sort((p, q) => p[0].t - q[0].t), onlyA: byT(onlyA), onlyB: byT(onlyB) };
}

export function describe(c: Comparison, la = 'a', lb = 'b'): string {
  const lines = [`${c.clip}: ${c.agreed.length} agreed, ${c.onlyA.length} only in ${la}, ${c.onlyB.length} only in ${lb}`];
  for (const [x, y] of c.agreed) {
    const d = y.t - x.t;
    lines.push(`  = ${x.direction.padEnd(3)} ${x.t.toFixed(1).padStart(6)} s / ${y.t.toFixed(1).padStart(6)} s (${d >= 0 ? '+' : ''}${d.toFixed(1)} s)  ${x.who}${x.who !== y.who ? ` | ${y.who}` : ''}`);
  }
  for (const x of c.onlyA) lines.push(`  ! only ${la}: ${x.direction.padEnd(3)} ${x.t.toFixed(1).padStart(6)} s  ${x.who}`);
  for (const y of c.onlyB) lines.push(`  ! only ${lb}: ${y.direction.padEnd(3)} ${y.t.toFixed(1).padStart(6)} s  ${y.who}`);
  return lines.join('\n');
}

function main(argv: string[]): number {
  const ids: string[] = [];
  let [la, lb, tolerance] = ['a', 'b', 1.5];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--a') la = argv[++i] ?? la;
    else if (arg === '--b') lb = argv[++i] ?? lb;
    else if (arg === '--tolerance') tolerance = Number(argv[++i]);
    else ids.push(arg);
  }
  const clips = loadClips().filter((c) => ids.length === 0 || ids.includes(c.id));
  let disagreements = 0;
  for (const clip of clips) {
    const a = readLabels(clip.id, la);
    const b = readLabels(clip.id, lb);
    if (!a && !b) {
      console.log(`${clip.id}: no labels yet`);
      continue;
    }
    if (!a || !b) {
      console.log(`${clip.id}: only labeller ${a ? la : lb} has labelled it`);
      disagreements++;
      continue;
    }
    const c = compare(clip.id, a.crossings, b.crossings, tolerance);
    console.log(describe(c, la, lb));
    disagreements += c.onlyA.length + c.onlyB.length;
  }
  console.log(disagreements === 0 ? 'no disagreements' : `${disagreements} disagreement(s)`);
  return disagreements === 0 ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  process.exit(main(process.argv.slice(2)));
}
