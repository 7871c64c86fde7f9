/**
 * Where the ingest thread's CPU per visit goes (`npm run bench -- ingest-cost`, issue 27 item 5): the ingest
 * thread's work (IngestCore: parse, validate, match, write, commit) run in this process, one batch at a time, CPU
 * time from process.cpuUsage (so other work on the box does not count, only what it does to the caches), for batches
 * of 1 to 64 visits, with the `scale` bench's visits (60 % returning, 30 % new, 10 % no face) and with no faces at
 * all. Per batch size the CPU per visit; the fit of `a + b / batch` splits it into what each visit costs and what
 * each batch costs. The MQTT side (the broker, the PUBACK, the hand-over between threads) is not in it: `scale`
 * measures the whole process.
 */
import { pino } from 'pino';
import { upTopic } from '../shared/topics.js';
import { loadKeys } from '../server/crypto/keys.js';
import { openStore } from '../server/db/store.js';
import { Faces } from '../server/identity/synthetic.js';
import { Identities } from '../server/visits/identities.js';
import { IngestCore } from '../server/visits/ingest-core.js';
import { startHarness } from '../test/support/harness.js';
import { shopPc, type ShopPc } from '../test/support/visits.js';
import { GALLERY, Visits } from './scale-load.js';
import { sqliteCounts } from './scale-rig.js';
import { loadAverage, progress, table } from './util.js';

const SHOPS = 16;
const SIZES = (process.env.INGEST_COST_SIZES ?? '1,4,16,64').split(',').map(Number);
/** Visits measured per batch size (after a warm-up of a quarter as many). */
const VISITS = Number(process.env.INGEST_COST_VISITS ?? 4000);

export async function run(): Promise<string> {
  const h = await startHarness();
  const pcs: ShopPc[] = [];
  const lines: string[][] = [];
  try {
    const chain = await h.company();
    for (let i = 0; i < SHOPS; i++) pcs.push(await shopPc(h, chain.ownerToken, chain.slug, `Shop ${i + 1}`));
    const faces = new Faces(1);
    const gallery = faces.identities(GALLERY);
    const rig = sqliteCounts(h.dataDir);
    await rig.fillGallery(chain.id, gallery);
    rig.close();
    progress(`gallery: ${GALLERY} customers`);

    const config = { ...h.server.deps.config, FOOTFALL_INGEST_BATCH_MS: 0 };
    const log = pino({ level: 'silent' });
    // As the ingest thread opens it (server/visits/ingest-worker.ts): no checkpoint inside its commits (the harness's
    // checkpoint thread does them, as in head office). With SQLite's automatic checkpoint, a commit now and then copied
    // a thousand pages back to the database file, which this bench counted as the ingest thread's work.
    const store = await openStore(config, { autoCheckpoint: false });
    const identities = new Identities({ store, keys: loadKeys(config), log }, { matchThreshold: config.FOOTFALL_MATCH_THRESHOLD });
    const core = new IngestCore({ store, config, log, identities, emit: () => undefined });
    await identities.loadAll();
    const topics = pcs.map((pc) => upTopic(chain.slug, pc.shop.slug, 'visit'));
    let id = 0;
    const measure = async (visits: Visits | undefined, size: number, n: number): Promise<{ cpu: number; wall: number }> => {
      const bodies: Buffer[] = [];
      for (let i = 0; i < n; i++) bodies.push(Buffer.from(visits ? visits.next().body : faceless()));
      const t0 = process.cpuUsage();
      const w0 = performance.now();
      for (let i = 0; i < n; i += size) {
        const at = new Date().toISOString();
        for (let j = i; j < Math.min(n, i + size); j++) core.accept(++id, topics[j % topics.length]!, bodies[j]!, at);
        await core.flush();
      }
      const t = process.cpuUsage(t0);
      return { cpu: (t.user + t.system) / 1000 / n, wall: (performance.now() - w0) / n };
    };
    const mixes: [string, () => Visits | undefined][] = [
      ['scale mix (60 % returning, 30 % new, 10 % no face)', () => new Visits(gallery, 0.3)],
      ['no face (count only)', () => undefined],
    ];
    const fits: string[] = [];
    for (const [name, make] of mixes) {
      const per: [number, number][] = [];
      for (const size of SIZES) {
        await measure(make(), size, VISITS / 4);
        const m = await measure(make(), size, VISITS);
        per.push([size, m.cpu]);
        progress(`${name}: batches of ${size}: ${m.cpu.toFixed(3)} ms a visit (wall ${m.wall.toFixed(3)} ms)`);
        lines.push([name, String(size), m.cpu.toFixed(3), m.wall.toFixed(3), loadAverage()]);
      }
      // Least squares of ms/visit = a + b / size.
      const xs = per.map(([s]) => 1 / s);
      const ys = per.map(([, y]) => y);
      const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
      const my = ys.reduce((a, b) => a + b, 0) / ys.length;
      const b = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
      fits.push(`${name}: **${(my - b * mx).toFixed(3)} ms each visit + ${b.toFixed(3)} ms each batch**`);
    }
    await store.close();
    return [
      '## Where the ingest thread\'s CPU goes (in-process, by batch size)',
      '',
      `IngestCore in this process on the embedded SQLite, a ${GALLERY.toLocaleString('en')}-customer gallery, ${SHOPS} shops, ${VISITS} visits per batch size after a warm-up, CPU time (process.cpuUsage). The broker, the PUBACK and the hand-over between threads are not in it.`,
      '',
      table(['visits', 'batch size', 'CPU ms a visit', 'wall ms a visit', 'load average (1/5/15 min)'], lines),
      '',
      'Fit of ms a visit = a + b / batch size:',
      '',
      ...fits.map((f) => `- ${f}`),
    ].join('\n');
  } finally {
    for (const pc of pcs) await pc.close();
    await h.close();
  }
}

let faceless_n = 0;
function faceless(): string {
  const at = new Date().toISOString();
  return JSON.stringify({ visit_id: `00000000-0000-4000-8000-${String(++faceless_n).padStart(12, '0')}`, occurred_at: at, camera_id: 'cam-1', quality: 0.2, passed_gate: false });
}
