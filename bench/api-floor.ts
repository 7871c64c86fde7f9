/**
 * What a microsecond of work per request costs under the API benchmark's load (`npm run bench -- api-floor`): bare Koa
 * (bench/bare-koa.ts) with a busy-wait of a known length in each request, and plain node:http the same way, each
 * flat out with autocannon as `npm run bench -- api` drives head office (20 connections, same process layout, same
 * 2 cores). It sets the scale of the api benchmark's "share of bare Koa": work added to a request costs more than its
 * own time, because a server slower than the load generator leaves it idle between answers, and each answer then has
 * to wake it.
 */
import { exited, med, n0, shoot, startBareKoa, type Proc } from './api.js';
import { loadAverage, progress, table } from './util.js';

const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 2);

const variants: { name: string; env: Record<string, string>; spin: number }[] = [
  { name: 'bare Koa', env: {}, spin: 0 },
  { name: 'bare Koa + 5 us busy-wait', env: { BARE_SPIN_US: '5' }, spin: 5 },
  { name: 'bare Koa + 10 us busy-wait', env: { BARE_SPIN_US: '10' }, spin: 10 },
  { name: 'bare Koa + 20 us busy-wait', env: { BARE_SPIN_US: '20' }, spin: 20 },
  { name: 'bare Koa + 40 us busy-wait', env: { BARE_SPIN_US: '40' }, spin: 40 },
  { name: 'plain node:http', env: { BARE_HTTP: '1' }, spin: 0 },
  { name: 'plain node:http + 10 us busy-wait', env: { BARE_HTTP: '1', BARE_SPIN_US: '10' }, spin: 10 },
  { name: 'plain node:http + 20 us busy-wait', env: { BARE_HTTP: '1', BARE_SPIN_US: '20' }, spin: 20 },
];

export async function run(): Promise<string | undefined> {
  const load0 = loadAverage();
  const procs: Proc[] = [];
  try {
    for (const v of variants) procs.push(await startBareKoa(v.env));
    const rps: number[][] = variants.map(() => []);
    const cpu: number[][] = variants.map(() => []);
    for (let round = 1; round <= ROUNDS; round++) {
      for (let i = 0; i < variants.length; i++) {
        const s = await shoot(`${procs[i]!.url}/`, undefined, false, procs[i]!.child.pid!);
        rps[i]!.push(s.rps);
        cpu[i]!.push(s.cpuMsPerReq * 1000);
        progress(`round ${round}/${ROUNDS} ${variants[i]!.name}: ${n0(s.rps)} req/s, ${(s.cpuMsPerReq * 1000).toFixed(1)} CPU us/req`);
      }
    }
    const bare = med(rps[0]!);
    const rows = variants.map((v, i) => {
      const us = med(cpu[i]!);
      return [v.name, `${v.spin} us`, n0(med(rps[i]!)), `${((100 * med(rps[i]!)) / bare).toFixed(1)} %`, us.toFixed(1), (us - v.spin - med(cpu[0]!)).toFixed(1)];
    });
    return [
      '## What a microsecond per request costs (the api benchmark\'s scale)',
      '',
      `Bare Koa (bench/bare-koa.ts, a constant JSON body) with a busy-wait of a known length in each request, and plain node:http the same way, each in its own process, flat out with 20 autocannon connections in the benchmark's process for ${process.env.BENCH_API_SECONDS ?? 8} s, ${ROUNDS} rounds interleaved; medians. CPU us/req: the server process's CPU time (/proc) per answer. "Beyond bare Koa": that CPU less the busy-wait and less bare Koa's own. Load average before / after: ${load0} → ${loadAverage()} (2 cores shared with other work).`,
      '',
      table(['server', 'work added per request', 'most req/s', 'share of bare Koa', 'CPU us/req', 'beyond bare Koa and the busy-wait (us)'], rows),
    ].join('\n');
  } finally {
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p.child)));
  }
}
