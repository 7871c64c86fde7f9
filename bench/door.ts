/**
 * Body counting at the door (`npm run bench -- door`, issue 20): the built CLI's `footfall agent` (its own process,
 * enrolled with `footfall enrol` to a real head office, `footfall server`, also its own process) on one camera with a
 * counting line: a local RTSP server (agent/fixtures/rtsp-server.ts) looping the door video (agent/fixtures/door-video.ts:
 * 640x360 25 fps, 60 s, seven entries and five exits, ground truth known), detect_fps 5. The agent's models folder holds
 * the person model only, so recognition does not run: what is measured is body counting (motion gating, the person
 * detector in its thread, tracker, line, queue, MQTT).
 *
 * - Accuracy: the agent is stopped (SIGTERM: queued crossings are delivered first) `LOOPS` whole runs of the video
 *   after its camera connected (the video starts and ends with an empty door, so the cut falls between people); the
 *   entries and exits head office stored (GET /api/sites) against LOOPS times the truth.
 * - CPU: the agent's node process (all threads) and its ffmpeg child from /proc, 1-s samples over the whole runs.
 * - One agent session per door_fps in RATES (default 3, the agent's, then 0: every frame), a table row each.
 * - Bare reference, same run: the person detector alone on this thread on the video's frames (CPU ms per frame, so
 *   % of a core at the rate the headline session looks), and ffmpeg alone decoding the same stream with capture's
 *   arguments.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadBodyDetector } from '../agent/bodies/detector.js';
import { DOOR_LINE, DOOR_VIDEO, doorTruth, ensureDoorVideo, decodeDoorFrames } from '../agent/fixtures/door-video.js';
import { bodyModelsOnly, ensureTestBodyModels, testModelsDir } from '../agent/models/test-cache.js';
import { processCpuMs, threadCpuMs } from '../agent/vision/cpu.js';
import { api, cli, root, startHeadOffice, type Proc } from './api.js';
import { serviceEnvironment, serviceNodeArgs } from './agent-real.js';
import { bareDecode, f1, mean, med, range, startRtsp, stopProcesses, type Rtsp } from './agent-process.js';
import { sampleAgent, spawnLogged, type LoggedProcess } from './proc.js';
import { BENCH_ADMIN, loadAverage, progress, table } from './util.js';

const execFileP = promisify(execFile);
const DETECT_FPS = 5;
/**
 * The agent's door_fps (person detection at most this often per camera; 0: every frame capture delivers), one agent
 * session each (BENCH_DOOR_RATES=3,0); the first, the agent's default, is the headline.
 */
const RATES = (process.env.BENCH_DOOR_RATES ?? '3,0').split(',').map(Number).filter((n) => Number.isInteger(n) && n >= 0 && n <= 30);
const LOOPS = Number(process.env.BENCH_DOOR_LOOPS ?? 2);
const { width: W, height: H, durationS } = DOOR_VIDEO;

/** CPU ms per frame of the person detector, bare on this thread, over every `step`-th frame of the video. */
async function bareDetector(all: Buffer[], step: number): Promise<{ name: string; ms: number; n: number }> {
  const detector = await loadBodyDetector(testModelsDir());
  const cpu = () => threadCpuMs() ?? processCpuMs();
  for (let i = 0; i < 3; i++) await detector.detect({ width: W, height: H, data: all[0]! });
  let n = 0;
  const c0 = cpu();
  for (let i = 0; i < all.length; i += step, n++) await detector.detect({ width: W, height: H, data: all[i]! });
  const ms = (cpu() - c0) / n;
  await detector.close();
  return { name: detector.name, ms, n };
}


interface Session {
  /** The agent's door_fps in this session. */
  doorFps: number;
  samples: { node: number; ffmpeg: number; rss: number }[];
  row: { entries_today: number; exits_today: number; occupancy: number };
  detectorName: string;
  loadBefore: string;
  loadAfter: string;
}

/** One shop, one enrolled `footfall agent` with `door_fps` doorFps, one door camera at DETECT_FPS: LOOPS runs of the video measured, then SIGTERM. */
async function session(server: Proc, token: string, rtsp: Rtsp, tmp: string, doorFps: number, trueIn: number, trueOut: number): Promise<Session> {
  let agent: LoggedProcess | undefined;
  try {
    const shop = await api(server.url, 'POST', '/api/sites', { name: `Door Shop ${doorFps}`, timezone: 'UTC' }, token);
    const code = (await api(server.url, 'POST', `/api/sites/${shop.site_id}/enrolment-code`, {}, token)).code!;
    const configFile = path.join(tmp, `agent-${doorFps}.json`);
    const dataDir = path.join(tmp, `agent-data-${doorFps}`);
    await execFileP(process.execPath, [cli, 'enrol', '--server', server.url, '--code', code, '--config', configFile, '--data-dir', dataDir], { cwd: root });
    // The agent's local setting under test, written into the configuration `footfall enrol` made.
    fs.writeFileSync(configFile, JSON.stringify({ ...JSON.parse(fs.readFileSync(configFile, 'utf8')), door_fps: doorFps }, null, 2), { mode: 0o600 });
    const models = path.join(tmp, `models-${doorFps}`);
    bodyModelsOnly(models);

    agent = spawnLogged(process.execPath, [...serviceNodeArgs(), cli, 'agent', '--config', configFile, '--models', models], { cwd: root, env: { ...process.env, ...serviceEnvironment() }, logFile: path.join(tmp, `agent-${doorFps}.log`) });
    await agent.waitLog('the agent to start', (l) => (l.includes('"msg":"agent starting"') ? true : undefined));
    await api(server.url, 'POST', `/api/sites/${shop.site_id}/cameras`, { camera_id: 'door', host: '127.0.0.1', port: rtsp.port, path: '/door', max_width: W, tuning: { detect_fps: DETECT_FPS, line: DOOR_LINE } }, token);
    const connectedAt = await agent.waitLog('the door camera to connect', (l) => (l.includes('"msg":"camera connected"') ? (JSON.parse(l) as { time: number }).time : undefined));
    progress(`agent pid ${agent.pid}: camera connected; detect_fps ${DETECT_FPS}, door_fps ${doorFps}, measuring ${LOOPS} runs of the ${durationS}-s video`);
    const loadBefore = loadAverage();
    const samples = await sampleAgent(agent.pid, connectedAt + LOOPS * durationS * 1000 + 1000);
    await agent.stop();
    const loadAfter = loadAverage();
    const log = agent.log();
    const detectorName = /"detector":"([^"]+)","ms":\d+,"msg":"body counting running"/.exec(log)?.[1] ?? '?';
    const sites = (await api(server.url, 'GET', '/api/sites', undefined, token)) as unknown as { id?: string; slug: string; entries_today: number; exits_today: number; occupancy: number }[];
    const row = sites.find((s) => s.slug === shop.slug)!;
    progress(`counted ${row.entries_today} in / ${row.exits_today} out; truth ${LOOPS * trueIn} / ${LOOPS * trueOut}`);

    return { doorFps, samples, row, detectorName, loadBefore: String(loadBefore), loadAfter: String(loadAfter) };
  } finally {
    // Stopped above on the way through; on a failure, stopped here.
    await agent?.kill();
  }
}

export async function run(): Promise<string | undefined> {
  if (!fs.existsSync(cli)) {
    progress('the built CLI is missing: run `npm run bench -- door` (it builds first)');
    return undefined;
  }
  progress('person model and the door video');
  await ensureTestBodyModels();
  const { video } = await ensureDoorVideo();
  const truth = doorTruth();
  const trueIn = truth.filter((c) => c.direction === 'in').length;
  const trueOut = truth.length - trueIn;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-door-'));
  const procs: Parameters<typeof stopProcesses>[0] = [];
  let server: Proc | undefined;
  try {
    const rtsp = await startRtsp(video, '/door');
    procs.push(rtsp);
    server = await startHeadOffice(path.join(tmp, 'head-office'));
    const admin = (await api(server.url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const c = await api(server.url, 'POST', '/api/admin/clients', { company_name: 'Door Company', owner_email: 'owner@door.test', owner_name: 'Owner' }, admin);
    const token = (await api(server.url, 'POST', '/api/auth/login', { email: 'owner@door.test', password: c.password })).access_token!;
    const sessions: Session[] = [];
    for (const doorFps of RATES) sessions.push(await session(server, token, rtsp, tmp, doorFps, trueIn, trueOut));
    const main = sessions[0]!;
    const { samples, row, detectorName, loadBefore, loadAfter } = main;
    progress('bare references: ffmpeg decode, person detector on this thread');
    const decode = await bareDecode(`rtsp://127.0.0.1:${rtsp.port}/door`, 15, { fps: DETECT_FPS, maxWidth: W, warmupMs: 3000 });
    const all = await decodeDoorFrames(video, DETECT_FPS);
    const bare = await bareDetector(all, 2);
    // The rate the headline session looked at frames: capture's DETECT_FPS, paced to door_fps (every n-th frame).
    const lookFps = main.doorFps === 0 ? DETECT_FPS : DETECT_FPS / Math.ceil(900 / main.doorFps / (1000 / DETECT_FPS));
    const bareDetectPct = (lookFps * bare.ms * 100) / 1000;

    const node = samples.map((s) => s.node);
    const ff = samples.map((s) => s.ffmpeg);
    const perCamera = mean(node) + mean(ff);
    const err = (got: number, want: number) => `${got} (truth ${want}, ${got === want ? 'exact' : `${got > want ? '+' : ''}${got - want}`})`;
    return [
      '## Body counting at the door (person detector, tracker, line)',
      '',
      `\`footfall agent\` (built CLI, its own process, enrolled with \`footfall enrol\` to a real head office, with its systemd unit's environment) on one camera with a ` +
        `counting line: a local RTSP server (node, ffmpeg as the source) looping the door video (agent/fixtures/door-video.ts: ${W}x${H} 25 fps, ${durationS} s, ${trueIn} entries and ` +
        `${trueOut} exits per run, six people cut out of the registry photos, some with the face hidden), detect_fps ${DETECT_FPS}, the agent's door_fps ${main.doorFps} (person detection at most ${main.doorFps} times a second${main.doorFps === 0 ? ': 0 means every frame' : ''}). The agent's models folder holds only ` +
        `the person model (${detectorName}): no recognition, body counting alone. ${LOOPS} whole runs from the camera's connection, then SIGTERM (queued ` +
        `crossings delivered first); counts as head office stored them (GET /api/sites). CPU in % of one core, 1-s /proc samples over the runs (people in view ` +
        `about two thirds of the time). Bare reference in the same run: the person detector alone on this thread on every other frame of the video ` +
        `(${bare.ms.toFixed(0)} ms CPU per frame over ${bare.n} frames, so ${f1(bareDetectPct)} % of a core at ${lookFps} looks a second if every one were a detection), and ffmpeg alone ` +
        `decoding the same stream with capture's arguments. Load average before / after: ${loadBefore} → ${loadAfter} (2 cores shared with other work).`,
      '',
      table(
        ['', 'value'],
        [
          [`entries over ${LOOPS} runs`, `**${err(row.entries_today, LOOPS * trueIn)}**`],
          [`exits over ${LOOPS} runs`, `**${err(row.exits_today, LOOPS * trueOut)}**`],
          ['occupancy at the end', `${row.occupancy} (truth ${LOOPS * (trueIn - trueOut)})`],
          ['agent node process CPU (all threads)', `**${f1(mean(node))} %** mean (median ${f1(med(node))} %, 1-s samples ${range(node)})`],
          ['its ffmpeg', `${f1(mean(ff))} % mean (${range(ff)})`],
          ['agent RSS MiB', `${f1(med(samples.map((s) => s.rss)))} (${range(samples.map((s) => s.rss), 0)})`],
          [`bare person detector at ${lookFps} fps`, `${f1(bareDetectPct)} % (${bare.ms.toFixed(0)} ms per frame)`],
          ['bare ffmpeg decode', `${f1(med(decode))} % (${range(decode)})`],
          ['(node + ffmpeg) / (bare detector + bare decode)', `${(perCamera / (bareDetectPct + med(decode))).toFixed(2)}x`],
        ],
      ),
      '',
      `CPU per door camera (node + ffmpeg, mean): **${f1(perCamera)} % of a core**, so about ${(100 / perCamera).toFixed(1)} door cameras per core at detect_fps ${DETECT_FPS}, door_fps ${main.doorFps}. ` +
        (perCamera < bareDetectPct + med(decode)
          ? 'The agent stays below the bare figure because motion gating skips the empty door and, while the detector is busy, a camera keeps only its newest frame.'
          : 'Above the bare figure: what motion gating saves on the empty door is spent on the frame copies to the detector thread, the motion comparison, tracking and the rest of the agent.'),
      '',
      `By the agent's door_fps (person detection at most this often per camera; 0: every frame, here ${DETECT_FPS} a second; each its own agent session on the same video, ${LOOPS} runs each, in this run):`,
      '',
      table(
        ['door_fps', 'entries', 'exits', 'node CPU % (mean)', 'ffmpeg % (mean)', 'per door camera %', 'door cameras per core', 'RSS MiB'],
        sessions.map((x) => {
          const n = mean(x.samples.map((q) => q.node));
          const fm = mean(x.samples.map((q) => q.ffmpeg));
          return [x.doorFps === 0 ? `0 (${DETECT_FPS}/s)` : String(x.doorFps), err(x.row.entries_today, LOOPS * trueIn), err(x.row.exits_today, LOOPS * trueOut), f1(n), f1(fm), f1(n + fm), (100 / (n + fm)).toFixed(1), f1(med(x.samples.map((q) => q.rss)))];
        }),
      ),
    ].join('\n');
  } finally {
    await stopProcesses(procs, server);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
