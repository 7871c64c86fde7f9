import { describe, expect, it } from 'vitest';
import { schedule, type Job } from './sequencer.js';

const job = (item: string, s: number, camera = false, failed = false): Job<string> => ({ item, ms: s * 1000, camera, failed });

/** Plays `order` out on `workers` workers as vitest's pool does, with the camera slot: [file, start s, end s]. */
function play(jobs: Job<string>[], order: string[], workers: number): [string, number, number][] {
  const free = Array.from({ length: workers }, () => 0);
  let slot = 0;
  return order.map((name) => {
    const j = jobs.find((x) => x.item === name)!;
    const w = free.indexOf(Math.min(...free));
    const start = j.camera ? Math.max(free[w]!, slot) : free[w]!;
    free[w] = start + j.ms;
    if (j.camera) slot = free[w]!;
    return [name, start / 1000, free[w]! / 1000];
  });
}

describe('the test file order', () => {
  it('longest first (failed before all), and camera files spread so that none waits for the slot while others could run', () => {
    const jobs = [job('browser', 100), job('chain', 80, true), job('fuzz', 70), job('counting', 65, true), job('door', 60, true), job('a', 30), job('b', 30), job('c', 25), job('d', 20), job('e', 20), job('f', 10), job('g', 10), job('h', 5)];
    const order = schedule(jobs, 3);
    expect(order.slice(0, 3)).toEqual(['browser', 'chain', 'fuzz']);
    expect([...order].sort()).toEqual(jobs.map((j) => j.item).sort());
    const ran = play(jobs, order, 3);
    const cameras = ran.filter(([n]) => jobs.find((j) => j.item === n)!.camera).sort((x, y) => x[1] - y[1]);
    for (let i = 1; i < cameras.length; i++) expect(cameras[i]![1]).toBeGreaterThanOrEqual(cameras[i - 1]![2]);
    // No camera file was handed to a worker before the slot came free: nobody sat idle waiting for it.
    const free = Array.from({ length: 3 }, () => 0);
    for (const [n, start, end] of ran) {
      const w = free.indexOf(Math.min(...free));
      expect(start, n).toBe(free[w]);
      free[w] = end;
    }
    expect(schedule([job('x', 1), job('y', 9), job('z', 2, false, true)], 2)).toEqual(['z', 'y', 'x']);
  });

  it('files that share worker processes go as one block per project, longest first, after the first camera file (one that failed still goes first)', () => {
    const shared = (item: string, s: number, failed = false): Job<string> => ({ ...job(item, s, false, failed), shared: 'server' });
    const jobs = [shared('s1', 5), job('big', 50), shared('s2', 30), job('cam', 40, true), shared('s3', 1, true), job('small', 2), job('cam2', 10, true)];
    expect(schedule(jobs, 3)).toEqual(['s3', 'big', 'cam', 's2', 's1', 'small', 'cam2']);
    // No camera file: the block goes last.
    expect(schedule(jobs.filter((j) => !j.camera), 3)).toEqual(['s3', 'big', 'small', 's2', 's1']);
  });
});
