/** The scale benchmark's markdown section (bench/scale.ts measures, this writes it down). */
import os from 'node:os';
import type { RigOptions } from './scale-rig.js';
import { CAMERAS, GALLERY, HEARTBEAT_S, PER_CAMERA, SLOW_MS } from './scale-load.js';
import { ms, table } from './util.js';

type Setup = Omit<RigOptions, 'profileDir'>;

/** The fixed-rate phase: CPU ms per stored visit, net of each one's idle CPU (NaN where there is no such process). */
export interface CpuPhase {
  rate: number;
  seconds: number;
  pcs: number;
  load: string;
  hoGross: number;
  ho: number;
  pg: number;
  mq: number;
  /** Idle CPU, share of a core. */
  idleShare: { ho: number; pg: number; mq: number };
  ackP50: number;
  ackP99: number;
  storedP50: number;
  storedP99: number;
  storedSamples: number;
  lost: number;
  /** PostgreSQL: transactions rolled back in head office's database meanwhile (NaN on SQLite). */
  rollbacks: number;
  /** Stored visits per ingest transaction (head office's metrics). */
  perBatch: number;
}

export interface StepResult {
  pcs: number;
  rate: number;
  visitsPerSecond: number;
  published: number;
  stored: number;
  lost: number;
  /** Of the lost, stored within BACKLOG_MS more (a backlog, not a loss). */
  late: number;
  p50: number;
  p99: number;
  storedP50: number;
  storedP99: number;
  /** CPU ms per stored visit, gross: head office (all processes), PostgreSQL, Mosquitto. */
  ho: number;
  pg: number;
  mq: number;
  hoShare: number;
  rssStart: (number | undefined)[];
  rssEnd: (number | undefined)[];
  load: string;
  /** The load generator's own event-loop delay p99 (ms): its stalls count in the latencies too. */
  genLag: number;
  rollbacks: number;
  /** Stored visits per ingest transaction (head office's metrics). */
  perBatch: number;
  /** PUBACKs of SLOW_MS or more by 10-s window (UTC time, count, slowest). */
  stalls: string[];
  /** The chain's customers (the gallery searched) at the step's start and end: new people enrol as the steps go. */
  customers: [number, number];
  ok: boolean;
}

export interface Measured {
  setup: Setup;
  /** The fixed-rate phase (absent only where a run measured steps alone: SCALE_FRESH's later head offices). */
  cpu: CpuPhase | undefined;
  steps: StepResult[];
  rssSamples: { t: number; rss: number | undefined; customers: number }[];
  /** The time to stored was measured (arrivals stream). */
  streamed: boolean;
}

export function setupName(s: Setup): string {
  const store = s.store === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  const broker = s.broker === 'embedded' ? 'embedded broker' : 'Mosquitto';
  return `${store}, ${broker}, ${s.processes} process${s.processes > 1 ? 'es' : ''}`;
}

const mib = (b: number | undefined) => (b === undefined ? '-' : (b / 2 ** 20).toFixed(0));
const mibs = (bs: (number | undefined)[]) => bs.map(mib).join(' + ');
const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '-');
const share = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '-');

export function report(all: Measured[], o: { steps: number[]; stepS: number; minutes: number; pin: boolean; newShare: number; faceShare: number; p99Limit: number; fresh: boolean }): string {
  const classic = all.every((m) => m.setup.store === 'sqlite' && m.setup.broker === 'embedded' && m.setup.processes === 1);
  const anyPg = all.some((m) => m.setup.store === 'postgres');
  const anyMq = all.some((m) => m.setup.broker === 'mosquitto');
  const anyStream = all.some((m) => m.streamed);
  const several = all.length > 1;
  const lines = [
    classic ? '## Scale: the embedded box (head office, SQLite, aedes)' : `## Scale: ${[...new Set(all.map((m) => setupName(m.setup)))].join('; ')}`,
    '',
    `Head office as \`npm start\` runs it (built CLI, own process(es), default log level to a file); one chain, ${GALLERY.toLocaleString('en')}-customer gallery at the start${o.fresh ? ' of every step (each on a head office of its own)' : ''}; new people enrol as the visits come (each step's customers at its start and end);`,
    `this process simulates the shop PCs (mqtt.js, one connection each; ${CAMERAS} cameras x ${PER_CAMERA} visits/s each = ${CAMERAS * PER_CAMERA} visits/s per shop PC,`,
    `QoS 1; a heartbeat every ${HEARTBEAT_S} s). Visits: ${Math.round(100 * (o.faceShare - o.newShare))} % returning, ${Math.round(100 * o.newShare)} % new people, ${Math.round(100 * (1 - o.faceShare))} % no face.`,
    `On SQLite with the embedded broker the PUBACK comes once the visit is stored; on PostgreSQL it can come before (the ingest thread acknowledges up to the first visit still queued, and a batch being written is no longer queued); with Mosquitto it comes from Mosquitto.`,
    `"Stored" is the time from publish to the visit's arrival on the arrivals stream (GET /api/visits/stream of every process, the first; visits that extend a stay make no arrival), measured where the PUBACK does not say it${anyStream ? '' : ' (not in this run)'}.`,
    `**A shared box**: ${os.cpus().length} cores shared with other sessions' work, load generator, head office${anyPg ? ', PostgreSQL' : ''}${anyMq ? ', Mosquitto' : ''} on the same cores${o.pin ? ' (pinned: head office core 0, load generator core 1)' : ''}; the load average is beside every figure.`,
    '',
    `**CPU per ingested visit** (/proc: head office's process(es), the PostgreSQL cluster's server and backends, Mosquitto, each net of its own idle CPU measured just before; ${all[0]!.cpu?.rate} visits/s for ${all[0]!.cpu?.seconds} s from ${all[0]!.cpu?.pcs} shop PCs):`,
    '',
    table(
      ['setup', 'load average (1/5/15 min)', 'head office ms/visit (gross)', 'PostgreSQL ms/visit', 'Mosquitto ms/visit', 'idle: head office / PostgreSQL / Mosquitto (share of a core)', 'PUBACK p50 / p99 (ms)', 'stored p50 / p99 (ms)', 'lost', 'visits a transaction', ...(anyPg ? ['transactions rolled back'] : [])],
      all.flatMap(({ setup, cpu }) => (cpu ? [{ setup, cpu }] : [])).map(({ setup, cpu }) => [
        setupName(setup),
        cpu.load,
        `**${f3(cpu.ho)}** (${f3(cpu.hoGross)})`,
        f3(cpu.pg),
        f3(cpu.mq),
        `${share(cpu.idleShare.ho)} / ${share(cpu.idleShare.pg)} / ${share(cpu.idleShare.mq)}`,
        `${ms(cpu.ackP50)} / ${ms(cpu.ackP99)}`,
        cpu.storedSamples > 0 ? `${ms(cpu.storedP50)} / ${ms(cpu.storedP99)}` : '-',
        cpu.lost,
        cpu.perBatch.toFixed(1),
        ...(anyPg ? [Number.isFinite(cpu.rollbacks) ? cpu.rollbacks : '-'] : []),
      ]),
    ),
    '',
  ];
  const head = [
    ...(several ? ['setup'] : []),
    'shop PCs x 4 cameras',
    'visits/s',
    'lost (15 s after the step)',
    'PUBACK p50 / p99 (ms)',
    ...(anyStream ? ['stored p50 / p99 (ms)'] : []),
    'head office CPU ms/visit',
    'share of a core',
    'visits a transaction',
    ...(anyPg ? ['PostgreSQL CPU ms/visit'] : []),
    ...(anyMq ? ['Mosquitto CPU ms/visit'] : []),
    ...(anyPg ? ['transactions rolled back'] : []),
    'head office RSS start → end (MiB)',
    'customers start → end',
    'load average (1/5/15 min)',
    "load generator's loop delay p99 (ms)",
    'verdict',
  ];
  const rows = all.flatMap((m) =>
    m.steps.map((r) => [
      ...(several ? [setupName(m.setup)] : []),
      r.pcs.toLocaleString('en'),
      r.visitsPerSecond.toFixed(0),
      r.late > 0 ? `${r.lost} (${r.late} stored later)` : r.lost,
      `${ms(r.p50)} / ${ms(r.p99)}`,
      ...(anyStream ? [m.streamed ? `${ms(r.storedP50)} / ${ms(r.storedP99)}` : '-'] : []),
      f3(r.ho),
      `${(100 * r.hoShare).toFixed(0)} %`,
      r.perBatch.toFixed(1),
      ...(anyPg ? [f3(r.pg)] : []),
      ...(anyMq ? [f3(r.mq)] : []),
      ...(anyPg ? [Number.isFinite(r.rollbacks) ? r.rollbacks : '-'] : []),
      `${mibs(r.rssStart)} → ${mibs(r.rssEnd)}`,
      `${r.customers[0].toLocaleString('en')} → ${r.customers[1].toLocaleString('en')}`,
      r.load,
      ms(r.genLag),
      r.ok ? 'held' : '**failed**',
    ]),
  );
  lines.push(table(head, rows), '');
  for (const m of all)
    for (const r of m.steps)
      if (r.stalls.length > 0)
        lines.push(`${several ? `${setupName(m.setup)}, ` : ''}${r.pcs.toLocaleString('en')} shop PCs: PUBACKs of ${SLOW_MS} ms or more, by 10-s window (UTC): ${r.stalls.join('; ')}.`, '');
  for (const m of all) {
    const name = several ? `${setupName(m.setup)}: ` : '';
    if (o.minutes > 0) {
      const first = m.rssSamples[0];
      const last = m.rssSamples.at(-1);
      const added = (last?.customers ?? 0) - (first?.customers ?? 0);
      const grew = (last?.rss ?? 0) - (first?.rss ?? 0);
      lines.push(
        `${name}RSS over ${o.minutes} minutes (every 30 s, MiB, the first process): ${m.rssSamples.map((s) => mib(s.rss)).join(', ')}.`,
        `Customers meanwhile: ${first?.customers.toLocaleString('en')} → ${last?.customers.toLocaleString('en')} (${added.toLocaleString('en')} new people). ` +
          (added > 0 ? `RSS grew ${mib(grew)} MiB, ${(grew / added / 1024).toFixed(2)} KiB per new customer (head office keeps each customer's 512-d template in memory for matching: 2 KiB of floats).` : `RSS grew ${mib(grew)} MiB with no new customer.`),
        '',
      );
    } else {
      const passed = m.steps.filter((r) => r.ok);
      const ceiling = passed.length === m.steps.length ? `at least ${passed.at(-1)?.pcs ?? 0}` : `${passed.at(-1)?.pcs ?? 'under ' + o.steps[0]}`;
      lines.push(`${name}steps of ${o.stepS} s${o.fresh ? `, each on a head office of its own that starts from the ${GALLERY.toLocaleString('en')}-customer gallery` : ', one after the other on one head office (the gallery grows through them)'}; a step fails when a visit is lost or the p99 (the later of PUBACK and stored) reaches ${o.p99Limit} ms. **Ceiling: ${ceiling} shop PCs x ${CAMERAS} cameras.**`, '');
    }
  }
  return lines.join('\n');
}
