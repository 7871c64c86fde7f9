/**
 * Body counting at the door on REAL footage (`npm run bench -- door-real`, issue 25): every clip of the real set
 * (bench/real-footage/clips.json, committed under test/fixtures/real/) that has hand labels, each played ONCE by a
 * local RTSP server (agent/fixtures/rtsp-server.ts) to the built CLI's `footfall agent` (its own process, enrolled with
 * `footfall enrol` to a real head office, `footfall server`, also its own process, with its systemd unit's
 * environment), the camera added through the API with the clip's counting line (tuning.line) and otherwise the
 * product's defaults (detect_fps 8, the agent's door_fps 3; BENCH_DOOR_REAL_DOOR_FPS sets door_fps). The agent's
 * models folder holds the person model only, so recognition does not run.
 *
 * - Clip time: the RTSP server starts every client on the clip's first frame and plays it in real time; it tells
 *   (onPlaying) the wall-clock moment of the clip's first frame when a client's stream starts: clip time 0. (Not the agent's `camera
 *   connected`, which comes after ffmpeg's probe of the stream, ~1.5 s, nor the start of the agent's ffmpeg, ~1.2 s
 *   before the stream plays: both were measured here and missed by that much.) Crossing times are occurred_at minus
 *   that moment, less the stream's latency L to a client with capture's own ffmpeg arguments, measured in the same run
 *   (an ffmpeg alone on the first clip: L = the least of frame n's arrival - n / fps - PLAYING, as test/door-real
 *   lines up the frames it taps); the table's Δt shows what is left. The agent is stopped (SIGTERM: queued crossings are delivered
 *   first) just before the clip would loop, so each clip is seen exactly once; a clip whose stream started twice
 *   (the agent's ffmpeg reconnected: the clip starts again) is reported, not hidden.
 * - Counted: the crossings head office stored for the clip's shop (its SQLite file, read only: direction and
 *   occurred_at), against the clip's labels (labels/<id>.json when reconciled, else labels/<id>.a.json; the table
 *   says which). A counted crossing matches a true one of the same direction within 1.5 s, one to one (most pairs,
 *   then the least total time difference); precision = matched / counted, recall = matched / true.
 * - CPU: the agent's node process (all threads) and its ffmpeg child from /proc, 1-s samples over the clip; RSS.
 * - Bare reference, same run: ffmpeg alone decoding one clip's stream with capture's arguments.
 * BENCH_DOOR_REAL_CLIPS=id,id runs only those clips; BENCH_DOOR_REAL_FPS=10 serves every clip at 10 fps (re-encoded
 * once with ffmpeg's fps filter, x264 at CRF 18, before the run: a 10-fps camera); BENCH_DOOR_REAL_NODE_ARGS adds node
 * flags to the agent's command line only (`--cpu-prof --cpu-prof-dir=DIR` profiles its threads).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { decodeArgs } from '../agent/capture/ffmpeg.js';
import { DEFAULT_TUNING } from '../shared/agent-api.js';
import { bodyModelsOnly, ensureTestBodyModels, testModelsDir } from '../agent/models/test-cache.js';
import { api, cli, exited, root, startHeadOffice, waitFor, type Proc } from './api.js';
import { serviceEnvironment, serviceNodeArgs } from './agent-real.js';
import { startRtspServer } from '../agent/fixtures/rtsp-server.js';
import { ffmpegBin } from '../agent/capture/ffmpeg-bin.js';
import { bareDecode, f1, mean, med, range, startRtsp, stopProcesses, type Rtsp } from './agent-process.js';
import { sampleAgent, spawnLogged, type LoggedProcess } from './proc.js';
import { loadClips, matchCrossings, truthFor, type CrossingLabel, type RealClip } from './real-footage/clips.js';
import { BENCH_ADMIN, loadAverage, progress, table } from './util.js';

const execFileP = promisify(execFile);
const DOOR_FPS = process.env.BENCH_DOOR_REAL_DOOR_FPS === undefined ? undefined : Number(process.env.BENCH_DOOR_REAL_DOOR_FPS);
const ONLY = process.env.BENCH_DOOR_REAL_CLIPS?.split(',').filter(Boolean);
/** Serve each clip at this frame rate (re-encoded once beforehand with ffmpeg's fps filter; the camera's rate); unset: as recorded. */
const SERVE_FPS = process.env.BENCH_DOOR_REAL_FPS ? Number(process.env.BENCH_DOOR_REAL_FPS) : undefined;
/** Node flags for the agent only, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it). */
const AGENT_NODE_ARGS = process.env.BENCH_DOOR_REAL_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const TOLERANCE_S = 1.5;

interface Counted {
  t: number;
  direction: 'in' | 'out';
}

interface ClipResult {
  clip: RealClip;
  which: string;
  truth: CrossingLabel[];
  counted: Counted[];
  matched: number;
  missed: CrossingLabel[];
  falses: Counted[];
  meanDt: number;
  samples: { node: number; ffmpeg: number; rss: number }[];
  detectorName: string;
  /** The agent's ffmpeg was not the same process at the end (the stream restarted from the clip's start). */
  restarted: boolean;
}

/** The RTSP test server on `file` at `mount`, and every clip-time-0 moment it tells (one per client stream), in order. */
async function playingRtsp(file: string, mount: string): Promise<{ rtsp: Rtsp; playing: number[] }> {
  const playing: number[] = [];
  const rtsp = await startRtspServer({ file, mounts: [mount], onPlaying: (m, at) => void (m === mount && playing.push(at)) });
  return { rtsp, playing };
}

/**
 * The stream's latency to a client with capture's ffmpeg arguments (ms): ffmpeg alone reads `clip` at `fps` for
 * `seconds`, each frame's arrival on its stdout is timed, and L = min over frames n of (arrival - n / fps) - PLAYING.
 */
export async function streamLatencyMs(clip: RealClip, fps: number, seconds: number): Promise<number> {
  const { rtsp, playing } = await playingRtsp(clip.file, '/door');
  try {
    const args = decodeArgs(`rtsp://127.0.0.1:${rtsp.port}/door`, { fps, maxWidth: clip.width });
    const child = spawn(ffmpegBin(), ['-y', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
    const exit = exited(child);
    const frameBytes = `P6\n${clip.width} ${clip.height}\n255\n`.length + clip.width * clip.height * 3;
    const arrivals: number[] = [];
    let bytes = 0;
    child.stdout!.on('data', (c: Buffer) => {
      bytes += c.length;
      while (arrivals.length < Math.floor(bytes / frameBytes)) arrivals.push(Date.now());
    });
    await new Promise((r) => setTimeout(r, seconds * 1000));
    child.kill('SIGTERM');
    await exit;
    const at = await waitFor('the RTSP server to say the stream plays', () => playing[0], 5000);
    if (arrivals.length < fps * 2) throw new Error(`stream latency: only ${arrivals.length} frames in ${seconds} s`);
    return Math.min(...arrivals.map((t, n) => t - (n * 1000) / fps)) - at;
  } finally {
    await stopProcesses([rtsp], undefined);
  }
}

/**
 * One shop, one enrolled `footfall agent`, one door camera on the clip with its line: the clip once, then SIGTERM.
 * `faceVideo`: a second camera (role `faces`) on that video beside it, and the agent gets the face models too (the
 * door camera's role is then `door`: it counts, its faces are not visitors); the visits head office stored are returned.
 */
export async function session(
  server: Proc,
  token: string,
  clip: RealClip,
  tmp: string,
  headOfficeDb: string,
  latencyMs: number,
  faceVideo?: string,
): Promise<Omit<ClipResult, 'which' | 'truth' | 'matched' | 'missed' | 'falses' | 'meanDt'> & { visits: number }> {
  let agent: LoggedProcess | undefined;
  const { rtsp, playing } = await playingRtsp(clip.file, '/door');
  const faceRtsp = faceVideo ? await startRtsp(faceVideo, '/faces') : undefined;
  try {
    const shop = await api(server.url, 'POST', '/api/sites', { name: `Real ${clip.id}`, timezone: 'UTC' }, token);
    const code = (await api(server.url, 'POST', `/api/sites/${shop.site_id}/enrolment-code`, {}, token)).code!;
    const configFile = path.join(tmp, `agent-${clip.id}.json`);
    const dataDir = path.join(tmp, `agent-data-${clip.id}`);
    await execFileP(process.execPath, [cli, 'enrol', '--server', server.url, '--code', code, '--config', configFile, '--data-dir', dataDir], { cwd: root });
    if (DOOR_FPS !== undefined) fs.writeFileSync(configFile, JSON.stringify({ ...JSON.parse(fs.readFileSync(configFile, 'utf8')), door_fps: DOOR_FPS }, null, 2), { mode: 0o600 });
    const models = faceVideo ? testModelsDir() : path.join(tmp, `models-${clip.id}`);
    if (!faceVideo) bodyModelsOnly(models);

    agent = spawnLogged(process.execPath, [...serviceNodeArgs(), ...AGENT_NODE_ARGS, cli, 'agent', '--config', configFile, '--models', models], { cwd: root, env: { ...process.env, ...serviceEnvironment(), ...(process.env.BENCH_AGENT_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_AGENT_NODE_OPTIONS } : {}) }, logFile: path.join(tmp, `agent-${clip.id}.log`) });
    await agent.waitLog('the agent to start', (l) => (l.includes('"msg":"agent starting"') ? true : undefined));
    if (faceRtsp) {
      await api(server.url, 'POST', `/api/sites/${shop.site_id}/cameras`, { camera_id: 'faces', host: '127.0.0.1', port: faceRtsp.port, path: '/faces', tuning: { role: 'faces' } }, token);
      await agent.waitLog('the face camera to connect', (l) => (l.includes('"msg":"camera connected"') && l.includes('"faces"') ? true : undefined));
    }
    await api(server.url, 'POST', `/api/sites/${shop.site_id}/cameras`, { camera_id: 'door', host: '127.0.0.1', port: rtsp.port, path: '/door', max_width: clip.width, tuning: { line: clip.line, ...(faceRtsp ? { role: 'door' } : {}) } }, token);
    await agent.waitLog('the door camera to connect', (l) => (l.includes('"msg":"camera connected"') && (!faceRtsp || l.includes('"door"')) ? true : undefined));
    const streamAt = await waitFor('the RTSP server to say the stream plays', () => playing[0], 10_000);
    progress(`${clip.id}: agent pid ${agent.pid}, camera connected; playing the ${clip.duration_s}-s clip once`);
    // Stop a few frames before the clip would start again.
    const samples = await sampleAgent(agent.pid, streamAt + clip.duration_s * 1000 - 300);
    const restarted = playing.length > 1;
    await agent.stop();
    const log = agent.log();
    const detectorName = /"detector":"([^"]+)","ms":\d+,"msg":"body counting running"/.exec(log)?.[1] ?? '?';
    const db = new Database(headOfficeDb, { readonly: true, fileMustExist: true });
    const rows = db
      .prepare('SELECT c.direction AS direction, c.occurred_at AS occurred_at FROM crossings c JOIN shops s ON s.id = c.shop_id WHERE s.id = ? OR s.slug = ? ORDER BY c.occurred_at')
      .all(shop.site_id, shop.slug) as { direction: 'in' | 'out'; occurred_at: string }[];
    const visits = (db.prepare('SELECT count(*) AS n FROM visits v JOIN shops s ON s.id = v.shop_id WHERE s.id = ? OR s.slug = ?').get(shop.site_id, shop.slug) as { n: number }).n;
    db.close();
    const counted = rows.map((r) => ({ direction: r.direction, t: (Date.parse(r.occurred_at) - streamAt - latencyMs) / 1000 })).filter((c) => c.t > -1 && c.t < clip.duration_s + 1);
    if (restarted) progress(`${clip.id}: the agent's ffmpeg restarted during the clip: the stream started again, times after that are off`);
    return { clip, counted, samples, detectorName, restarted, visits };
  } finally {
    await agent?.kill();
    await stopProcesses(faceRtsp ? [rtsp, faceRtsp] : [rtsp], undefined);
  }
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)} %` : '-');

export async function run(): Promise<string | undefined> {
  if (!fs.existsSync(cli)) {
    progress('the built CLI is missing: run `npm run bench -- door-real` (it builds first)');
    return undefined;
  }
  const clips = loadClips().filter((c) => truthFor(c.id) && (!ONLY || ONLY.includes(c.id)));
  if (clips.length === 0) {
    progress('no labelled clip in bench/real-footage (labels/<id>.json or <id>.a.json)');
    return undefined;
  }
  progress('person model');
  await ensureTestBodyModels();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-door-real-'));
  let server: Proc | undefined;
  try {
    if (SERVE_FPS) {
      for (const [i, clip] of clips.entries()) {
        if (clip.fps === SERVE_FPS) continue;
        progress(`${clip.id}: re-encoding at ${SERVE_FPS} fps`);
        const file = path.join(tmp, `${clip.id}-${SERVE_FPS}fps.mp4`);
        await execFileP(ffmpegBin(), ['-v', 'error', '-y', '-i', clip.file, '-an', '-vf', `fps=${SERVE_FPS}`, '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '18', '-g', String(2 * SERVE_FPS), '-pix_fmt', 'yuv420p', file]);
        clips[i] = { ...clip, file, fps: SERVE_FPS };
      }
    }
    const hoDir = path.join(tmp, 'head-office');
    server = await startHeadOffice(hoDir);
    const admin = (await api(server.url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const c = await api(server.url, 'POST', '/api/admin/clients', { company_name: 'Real Door Company', owner_email: 'owner@realdoor.test', owner_name: 'Owner' }, admin);
    const token = (await api(server.url, 'POST', '/api/auth/login', { email: 'owner@realdoor.test', password: c.password })).access_token!;
    progress('the stream latency to capture\'s ffmpeg');
    const latencyMs = await streamLatencyMs(clips[0]!, DEFAULT_TUNING.detect_fps, 8);
    progress(`stream latency ${latencyMs.toFixed(0)} ms`);
    const loadBefore = loadAverage();
    const results: ClipResult[] = [];
    for (const clip of clips) {
      const { labels, which } = truthFor(clip.id)!;
      const s = await session(server, token, clip, tmp, path.join(hoDir, 'footfall.db'), latencyMs);
      const { pairs, onlyA: missed, onlyB: falses } = matchCrossings(labels.crossings, s.counted, TOLERANCE_S);
      const meanDt = mean(pairs.map(([x, y]) => y.t - x.t));
      results.push({ ...s, which, truth: labels.crossings, matched: pairs.length, missed, falses, meanDt });
      const n = (xs: { direction: string }[], d: string) => xs.filter((x) => x.direction === d).length;
      progress(`${clip.id}: counted ${n(s.counted, 'in')} in / ${n(s.counted, 'out')} out, truth ${n(labels.crossings, 'in')} / ${n(labels.crossings, 'out')}; ${pairs.length} matched, ${missed.length} missed, ${falses.length} false`);
    }
    const loadAfter = loadAverage();
    progress('bare reference: ffmpeg decode');
    const biggest = [...clips].sort((a, b) => b.width * b.height - a.width * a.height)[0]!;
    const rtsp = await startRtsp(biggest.file, '/door');
    let decode: number[];
    try {
      decode = await bareDecode(`rtsp://127.0.0.1:${rtsp.port}/door`, 10, { fps: DEFAULT_TUNING.detect_fps, maxWidth: biggest.width, warmupMs: 3000 });
    } finally {
      await stopProcesses([rtsp], undefined);
    }

    const n = (xs: { direction: string }[], d: string) => xs.filter((x) => x.direction === d).length;
    const err = (got: number, want: number) => `${got} / ${want}${got === want ? '' : ` (${got > want ? '+' : ''}${got - want})`}`;
    const rows = results.map((r) => {
      const node = r.samples.map((q) => q.node);
      const ff = r.samples.map((q) => q.ffmpeg);
      return [
        r.clip.id,
        `${r.clip.width}x${r.clip.height} ${r.clip.fps} fps, ${r.clip.duration_s} s`,
        err(n(r.counted, 'in'), n(r.truth, 'in')),
        err(n(r.counted, 'out'), n(r.truth, 'out')),
        pct(r.counted.length ? r.matched / r.counted.length : Number.NaN),
        pct(r.truth.length ? r.matched / r.truth.length : Number.NaN),
        Number.isFinite(r.meanDt) ? `${r.meanDt >= 0 ? '+' : ''}${r.meanDt.toFixed(1)} s` : '-',
        f1(mean(node)),
        f1(mean(ff)),
        f1(med(r.samples.map((q) => q.rss))),
      ];
    });
    const all = {
      truth: results.reduce((s, r) => s + r.truth.length, 0),
      counted: results.reduce((s, r) => s + r.counted.length, 0),
      matched: results.reduce((s, r) => s + r.matched, 0),
    };
    const detail = results
      .map((r) => `- \`${r.clip.id}\` (truth: ${r.which})${r.restarted ? ' (**the stream restarted during the clip**)' : ''}: missed ${r.missed.map((x) => `${x.direction} ${x.t.toFixed(1)} s (${x.who})`).join('; ') || 'none'}; false ${r.falses.map((x) => `${x.direction} ${x.t.toFixed(1)} s`).join(', ') || 'none'}`)
      .join('\n');
    const detector = results[0]?.detectorName ?? '?';
    const allNode = results.flatMap((r) => r.samples.map((q) => q.node));
    const allFf = results.flatMap((r) => r.samples.map((q) => q.ffmpeg));
    return [
      '## Body counting on real footage (hand-labelled clips)',
      '',
      `\`footfall agent\` (built CLI, its own process, enrolled with \`footfall enrol\` to a real head office, with its systemd unit's node flags and environment) on one door camera per clip: ` +
        `each clip of the real set (bench/real-footage/clips.json: public footage with its licence, committed under test/fixtures/real/) played once by a local RTSP server (node, ffmpeg as its source), ` +
        `the camera added through the API with the clip's counting line and otherwise the product's defaults (detect_fps ${DEFAULT_TUNING.detect_fps}, door_fps ${DOOR_FPS ?? 'the agent default (3)'}), ` +
        `person model only (${detector}). Counted = the crossings head office stored, timed from the stream's start (the RTSP test server's onPlaying: its source's first frame) less the stream's latency to capture's own ffmpeg, measured in the same run (${latencyMs.toFixed(0)} ms); a counted crossing matches a hand-labelled one of its direction ` +
        `within ${TOLERANCE_S} s, one to one; precision = matched / counted, recall = matched / labelled; Δt = mean counted minus labelled time of the matches. ` +
        `CPU in % of one core (1-s /proc samples over the clip), RSS of the agent. Bare reference in the same run: ffmpeg alone decoding \`${biggest.id}\`'s stream with capture's arguments: ` +
        `**${f1(med(decode))} %** (${range(decode)}). Load average before / after: ${loadBefore} → ${loadAfter} (2 cores shared with other work).`,
      '',
      table(['clip', 'video', 'entries (counted / true)', 'exits (counted / true)', 'precision', 'recall', 'Δt', 'node CPU %', 'ffmpeg %', 'RSS MiB'], rows),
      '',
      `All clips: ${all.counted} counted, ${all.truth} labelled, ${all.matched} matched: precision ${pct(all.counted ? all.matched / all.counted : Number.NaN)}, recall ${pct(all.truth ? all.matched / all.truth : Number.NaN)}; ` +
        `per door camera (node + ffmpeg, mean over every sample) **${f1(mean(allNode) + mean(allFf))} % of a core**.`,
      '',
      detail,
    ].join('\n');
  } finally {
    await stopProcesses([], server);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
