/**
 * Optimal assignment (the Hungarian method, shortest augmenting paths, O(n^3)) for the body tracker: which track
 * takes which detection so that the total cost is least. Greedy best-pair-first matching goes wrong with people
 * walking in file at a low frame rate: a track without a velocity yet overlaps the person following more than the
 * one it belongs to, takes them, and the tracks leapfrog without any of them ever crossing the line.
 */

/**
 * `cost[i][j]`: cost of giving detection j to track i, or Infinity when they may not be paired. Leaving a track or a
 * detection unpaired costs `unpaired` each. Returns, per track, the detection it takes or -1.
 */
export function assign(cost: readonly (readonly number[])[], detections: number, unpaired: number): number[] {
  const tracks = cost.length;
  const n = tracks + detections;
  if (tracks === 0) return [];
  if (detections === 0) return new Array<number>(tracks).fill(-1);
  // Square matrix: tracks and "no detection" rows, detections and "no track" columns; forbidden pairs cost BIG.
  const BIG = 1e9;
  const c = (i: number, j: number): number => {
    if (i < tracks && j < detections) return Number.isFinite(cost[i]![j]!) ? cost[i]![j]! : BIG;
    if (i < tracks || j < detections) return unpaired;
    return 0;
  };
  // e-maxx formulation, 1-based: u, v potentials; p[j] the row assigned to column j; way[] the augmenting path.
  const u = new Float64Array(n + 1);
  const v = new Float64Array(n + 1);
  const p = new Int32Array(n + 1);
  const way = new Int32Array(n + 1);
  for (let i = 1; i <= n; i++) {
    p[0] = i;
    let j0 = 0;
    const minv = new Float64Array(n + 1).fill(Infinity);
    const used = new Uint8Array(n + 1);
    do {
      used[j0] = 1;
      const i0 = p[j0]!;
      let delta = Infinity;
      let j1 = 0;
      for (let j = 1; j <= n; j++) {
        if (used[j]) continue;
        const cur = c(i0 - 1, j - 1) - u[i0]! - v[j]!;
        if (cur < minv[j]!) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j]! < delta) {
          delta = minv[j]!;
          j1 = j;
        }
      }
      for (let j = 0; j <= n; j++) {
        if (used[j]) {
          u[p[j]!] = u[p[j]!]! + delta;
          v[j] = v[j]! - delta;
        } else {
          minv[j] = minv[j]! - delta;
        }
      }
      j0 = j1;
    } while (p[j0] !== 0);
    do {
      const j1 = way[j0]!;
      p[j0] = p[j1]!;
      j0 = j1;
    } while (j0);
  }
  const out = new Array<number>(tracks).fill(-1);
  for (let j = 1; j <= detections; j++) {
    const i = p[j]! - 1;
    if (i >= 0 && i < tracks && Number.isFinite(cost[i]![j - 1]!)) out[i] = j - 1;
  }
  return out;
}
