/**
 * The real shop-PC agent benchmark (`npm run bench -- agent-real`): the built CLI's `footfall agent` (its own process,
 * enrolled with `footfall enrol` to a real head office, `footfall server`, also its own process) on one camera: a
 * local RTSP server (agent/fixtures/rtsp-server.ts) playing a 1280x720 25-fps H.264 door video made from the
 * registry-packaged photos (agent/fixtures/registry-photos.ts): each photo in the doorway 4 s, then the empty door
 * 2 s, so a face is in view two thirds of the time, with a camera's sensor noise throughout. detect_fps 5, the
 * camera's default max_width (1280).
 *
 * Read from /proc once a second: the agent's node process (all its threads) CPU and RSS, and its ffmpeg child's CPU,
 * separately. Phases: the door video, then the same camera on an empty door (no one in view: the idle cost), in
 * rounds (the camera's path is switched with PATCH /api/cameras/{id}, as an installer would).
 *
 * The bare reference, in the same run: ffmpeg alone decoding the same RTSP stream with the agent's own filter
 * (capture's arguments, output to /dev/null), and the model calls the frames need at the least, timed bare on this
 * thread (onnxruntime, 1 thread): the detector on every frame, landmarks and one embedding per frame with a face.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureTestPhotos } from '../agent/fixtures/registry-photos.js';
import type { ModelId } from '../agent/models/catalogue.js';
import { ensureTestModels, testCacheRoot, testModelsDir } from '../agent/models/test-cache.js';
import { processCpuMs, threadCpuMs } from '../agent/vision/cpu.js';
import { ModelSessions } from '../agent/vision/models.js';
import { api, cli as ownCli, exited, root, startHeadOffice, waitFor, type Proc } from './api.js';
import { bareDecode, f1, mean, med, range, startRtsp, stopProcesses } from './agent-process.js';
import { childrenOf, commandOf, cpuSeconds, rssBytes } from './proc.js';
import { BENCH_ADMIN, loadAverage, progress, table } from './util.js';
import { ffmpegBin } from '../agent/capture/ffmpeg-bin.js';

const execFileP = promisify(execFile);
/**
 * BENCH_AGENT_ROOT: another checkout's built CLI and systemd unit for the agent (head office stays this one's), to
 * measure an earlier version on the same video in the same way.
 */
const agentRoot = process.env.BENCH_AGENT_ROOT ?? root;
const cli = process.env.BENCH_AGENT_ROOT ? path.join(agentRoot, 'dist/cli/main.js') : ownCli;
const DETECT_FPS = 5;
const WIDTH = 1280;
const HEIGHT = 720;
const HOLD_S = 4;
const EMPTY_S = 2;
const SAMPLE_S = Number(process.env.BENCH_AGENT_SAMPLE_S ?? 20);
const SETTLE_S = Number(process.env.BENCH_AGENT_SETTLE_S ?? 10);
const ROUNDS = Number(process.env.BENCH_AGENT_ROUNDS ?? 2);
const PROFILE = process.env.BENCH_AGENT_PROFILE === '1';
/** BENCH_AGENT_RECOGNITION: the company's recognition mode for the run (`off`: count-only, docs/privacy.md); default all. */
const RECOGNITION = (process.env.BENCH_AGENT_RECOGNITION ?? 'all') as 'all' | 'consented' | 'off';
type Scene = 'door' | 'large' | 'empty';
const ALL_SCENES: readonly Scene[] = ['door', 'large', 'empty'];
/** BENCH_AGENT_SCENES: a comma-separated subset of door,large,empty (all by default). */
const SCENES: readonly Scene[] = process.env.BENCH_AGENT_SCENES ? ALL_SCENES.filter((x) => process.env.BENCH_AGENT_SCENES!.split(',').includes(x)) : ALL_SCENES;
const SCENE_NAMES: Record<Scene, string> = {
  door: 'door, a face in view 2/3 of the time (face 120-150 px wide)',
  large: 'door, large faces (350-400 px wide, 485 tall), in view 2/3 of the time',
  empty: 'empty door (idle)',
};

/**
 * One person at a time in the doorway: the same woman (W) cut out of two registry photos (the crops of
 * test/support/clips.ts: her face alone; the two are one person, SAME_PERSON), so she is a new customer, then a
 * returning one, again and again.
 */
const SHOWINGS = [
  { photo: 'sample1.jpg', crop: 'crop=720:ih:1200:0' },
  { photo: 'sample3.jpg', crop: 'crop=540:ih:880:0' },
] as const;

/**
 * The same woman close to the camera, as at a real door where people stand near it: her face 400 px wide
 * (sample1, box 215 px, crop scaled x1.86) and 350 px wide, 485 tall (sample3, box 222 x 310 px, x1.57), one at a
 * time, in the doorway 4 s of every 6 as above.
 */
const LARGE_SHOWINGS = [
  { photo: 'sample1.jpg', crop: 'crop=680:387:1231:129' },
  { photo: 'sample3.jpg', crop: 'crop=560:460:909:118' },
] as const;

/** The door (grey wall colour), a camera's temporal sensor noise, 1280x720 25 fps H.264 as an IP camera sends it. */
const DOOR = 'color=c=0x6b6459:s=1280x720:r=25';
const NOISE = 'noise=alls=3:allf=t';
const ENCODE = ['-r', '25', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-g', '50', '-pix_fmt', 'yuv420p', '-movflags', '+faststart'];

/** A door video: each showing in the doorway HOLD_S, then the empty door EMPTY_S, sensor noise throughout. */
async function showingsVideo(file: string, showings: readonly { photo: string; crop: string }[]): Promise<void> {
  if (fs.existsSync(file)) return;
  const { dir: photos } = await ensureTestPhotos();
  const inputs: string[] = [];
  const filters: string[] = [];
  const parts: string[] = [];
  showings.forEach((s, i) => {
    inputs.push('-loop', '1', '-framerate', '25', '-t', String(HOLD_S), '-i', path.join(photos, s.photo));
    filters.push(`[${i}:v]${s.crop},scale=${WIDTH}:${HEIGHT}:force_original_aspect_ratio=decrease,pad=${WIDTH}:${HEIGHT}:(ow-iw)/2:(oh-ih)/2:color=0x6b6459,setsar=1,fps=25,format=yuv420p[p${i}]`);
    filters.push(`${DOOR}:d=${EMPTY_S},format=yuv420p[b${i}]`);
    parts.push(`[p${i}][b${i}]`);
  });
  const graph = `${filters.join(';')};${parts.join('')}concat=n=${showings.length * 2}:v=1:a=0,${NOISE}[v]`;
  const tmp = `${file}.${process.pid}.tmp.mp4`;
  await execFileP(ffmpegBin(), ['-nostdin', '-v', 'error', '-y', ...inputs, '-filter_complex', graph, '-map', '[v]', ...ENCODE, tmp]);
  fs.renameSync(tmp, file);
}

export async function doorVideos(): Promise<{ door: string; large: string; empty: string }> {
  const dir = path.join(testCacheRoot(), 'video');
  fs.mkdirSync(dir, { recursive: true });
  const door = path.join(dir, 'door-720p25-v3.mp4');
  const large = path.join(dir, 'door-large-faces-720p25-v2.mp4');
  const empty = path.join(dir, 'door-empty-720p25-v3.mp4');
  await showingsVideo(door, SHOWINGS);
  await showingsVideo(large, LARGE_SHOWINGS);
  if (!fs.existsSync(empty)) {
    const tmp = `${empty}.${process.pid}.tmp.mp4`;
    const seconds = SHOWINGS.length * (HOLD_S + EMPTY_S);
    await execFileP(ffmpegBin(), ['-nostdin', '-v', 'error', '-y', '-f', 'lavfi', '-i', `${DOOR}:d=${seconds}`, '-vf', `format=yuv420p,${NOISE}`, ...ENCODE, tmp]);
    fs.renameSync(tmp, empty);
  }
  return { door, large, empty };
}

/** The `Environment=` settings of the agent's systemd unit (packaging/footfall-agent.service): the agent runs as it would there. */
export function serviceEnvironment(): Record<string, string> {
  return Object.fromEntries([...agentUnit().matchAll(/^Environment=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.trim()]));
}

/** The node flags of the agent's systemd unit (its ExecStart's options between node and the script), as the benches give them to `footfall agent`. */
export function serviceNodeArgs(): string[] {
  const exec = /^ExecStart=(\S+)((?:\s+--\S+)*)\s+\S+\/cli\/main\.js\b/m.exec(agentUnit());
  if (!exec) throw new Error('packaging/footfall-agent.service: no ExecStart running dist/cli/main.js');
  return exec[2]!.trim().split(/\s+/).filter(Boolean);
}

function agentUnit(): string {
  return fs.readFileSync(path.join(agentRoot, 'packaging/footfall-agent.service'), 'utf8');
}

interface Sample {
  nodePct: number;
  ffmpegPct: number;
  rssMiB: number;
}

/** One-second samples of the agent process and its ffmpeg child, for `seconds`. */
async function sample(agentPid: number, seconds: number): Promise<Sample[]> {
  const ffmpegPid = () => childrenOf(agentPid).find((p) => commandOf(p).includes('ffmpeg'));
  const out: Sample[] = [];
  let f = ffmpegPid();
  let a0 = cpuSeconds(agentPid)!;
  let f0 = f !== undefined ? (cpuSeconds(f) ?? 0) : 0;
  let t0 = performance.now();
  for (let i = 0; i < seconds; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = performance.now();
    const a = cpuSeconds(agentPid)!;
    const fNow = ffmpegPid();
    const fc = fNow !== undefined ? (cpuSeconds(fNow) ?? 0) : 0;
    const wall = (now - t0) / 1000;
    out.push({ nodePct: (100 * (a - a0)) / wall, ffmpegPct: fNow === f ? (100 * (fc - f0)) / wall : Number.NaN, rssMiB: (rssBytes(agentPid) ?? 0) / 2 ** 20 });
    a0 = a;
    f = fNow;
    f0 = fc;
    t0 = now;
  }
  return out;
}

/** CPU ms per call of each model, bare on this thread (onnxruntime, 1 intra-op thread), random inputs. */
async function bareModels(): Promise<Partial<Record<ModelId, number>>> {
  const models = await ModelSessions.load({ modelsDir: testModelsDir(), intraOpThreads: 1 });
  const out: Partial<Record<ModelId, number>> = {};
  const cpu = () => threadCpuMs() ?? processCpuMs();
  for (const id of ['detect', 'landmark', 'feature'] as ModelId[]) {
    const n = models.spec(id).input.shape.reduce((a, b) => a * b, 1);
    const x = new Float32Array(n).map(() => Math.random() * 2 - 1);
    for (let i = 0; i < 10; i++) await models.run(id, x);
    const runs = id === 'feature' ? 60 : 300;
    const c0 = cpu();
    for (let i = 0; i < runs; i++) await models.run(id, x);
    out[id] = (cpu() - c0) / runs;
  }
  await models.release();
  return out;
}


export async function run(): Promise<string | undefined> {
  if (!fs.existsSync(cli)) {
    progress('the built CLI is missing: run `npm run bench -- agent-real` (it builds first)');
    return undefined;
  }
  progress('models, photos and the door videos');
  await ensureTestModels();
  const videos = await doorVideos();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-agent-real-'));
  const procs: Parameters<typeof stopProcesses>[0] = [];
  let server: Proc | undefined;
  try {
    const door = await startRtsp(videos.door, '/door');
    const large = await startRtsp(videos.large, '/large');
    const empty = await startRtsp(videos.empty, '/empty');
    procs.push(door, large, empty);
    const streams = { door, large, empty };
    server = await startHeadOffice(path.join(tmp, 'head-office'));
    const admin = (await api(server.url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const c = await api(server.url, 'POST', '/api/admin/clients', { company_name: 'Door Company', owner_email: 'owner@door.test', owner_name: 'Owner' }, admin);
    const token = (await api(server.url, 'POST', '/api/auth/login', { email: 'owner@door.test', password: c.password })).access_token!;
    const shop = await api(server.url, 'POST', '/api/sites', { name: 'Door Shop', timezone: 'Europe/London' }, token);
    if (RECOGNITION !== 'all') await api(server.url, 'PATCH', '/api/company/privacy', { recognition: RECOGNITION }, token);
    const camera = await api(server.url, 'POST', `/api/sites/${shop.site_id}/cameras`, { camera_id: 'door', host: '127.0.0.1', port: door.port, path: '/door', tuning: { detect_fps: DETECT_FPS } }, token);
    const cameraPath = async (port: number, p: string) => api(server!.url, 'PATCH', `/api/cameras/${camera.id}`, { port, path: p }, token);
    const code = (await api(server.url, 'POST', `/api/sites/${shop.site_id}/enrolment-code`, {}, token)).code!;
    const configFile = path.join(tmp, 'agent.json');
    await execFileP(process.execPath, [cli, 'enrol', '--server', server.url, '--code', code, '--config', configFile, '--data-dir', path.join(tmp, 'agent-data')], { cwd: root });

    const logFile = path.join(tmp, 'agent.log');
    const out = fs.openSync(logFile, 'w');
    const profileDir = PROFILE ? path.join(tmp, 'profile') : undefined;
    const agent = spawn(process.execPath, [...serviceNodeArgs(), ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), cli, 'agent', '--config', configFile, '--models', testModelsDir()], {
      cwd: agentRoot,
      env: { ...process.env, ...serviceEnvironment() },
      stdio: ['ignore', out, out],
    });
    fs.closeSync(out);
    const agentExit = exited(agent);
    procs.push({ child: agent, exit: agentExit });
    await waitFor('the agent to run recognition', () => (/"msg":"recognition running"/.test(fs.readFileSync(logFile, 'utf8')) ? true : undefined), 120_000);
    progress(`agent pid ${agent.pid}: recognition running; settling ${SETTLE_S} s`);

    const loadBefore = loadAverage();
    const phases: Record<Scene, Sample[][]> = { door: [], large: [], empty: [] };
    const decode: Record<Scene, number[]> = { door: [], large: [], empty: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of SCENES) {
        const rtsp = streams[which];
        await cameraPath(rtsp.port, `/${which}`);
        await new Promise((r) => setTimeout(r, SETTLE_S * 1000));
        const s = await sample(agent.pid!, SAMPLE_S);
        phases[which].push(s);
        progress(`round ${round + 1}/${ROUNDS} ${which}: node ${f1(med(s.map((x) => x.nodePct)))} % (mean ${f1(mean(s.map((x) => x.nodePct)))}, ${range(s.map((x) => x.nodePct))}), ffmpeg ${f1(med(s.map((x) => x.ffmpegPct)))} %, RSS ${f1(med(s.map((x) => x.rssMiB)))} MiB`);
        const bare = await bareDecode(`rtsp://127.0.0.1:${rtsp.port}/${which}`, Math.min(15, SAMPLE_S), { fps: DETECT_FPS, maxWidth: WIDTH, warmupMs: 4000 });
        decode[which].push(...bare);
        progress(`round ${round + 1}/${ROUNDS} ${which}: bare ffmpeg decode ${f1(med(bare))} %`);
      }
    }
    const loadAfter = loadAverage();
    const visits = await api(server.url, 'GET', '/api/visits?limit=500', undefined, token);
    const visitCount = (visits as unknown as { arrivals: unknown[] }).arrivals.length;
    agent.kill('SIGTERM');
    await agentExit;
    if (profileDir) progress(`agent profile: ${profileDir}`);

    progress('bare model calls');
    const perCall = await bareModels();
    const faceShare = HOLD_S / (HOLD_S + EMPTY_S);
    const withFaces = (DETECT_FPS * (perCall.detect! + faceShare * (perCall.landmark! + perCall.feature!)) * 100) / 1000;
    const bareModelPct: Record<Scene, number> = { door: withFaces, large: withFaces, empty: (DETECT_FPS * perCall.detect! * 100) / 1000 };

    const rows = SCENES.map((which) => {
      const all = phases[which].flat();
      const node = all.map((x) => x.nodePct);
      const rounds = phases[which].map((s) => med(s.map((x) => x.nodePct)));
      const ff = all.map((x) => x.ffmpegPct);
      const rss = all.map((x) => x.rssMiB);
      const bare = bareModelPct[which] + med(decode[which]);
      return [
        SCENE_NAMES[which],
        `**${f1(med(node))} %** (mean ${f1(mean(node))}; 1-s samples ${range(node)}; round medians ${rounds.map(f1).join(', ')})`,
        `${f1(med(rss))} (${range(rss, 0)}; mean ${f1(mean(rss))})`,
        `${f1(med(ff))} % (${range(ff)})`,
        `${f1(med(decode[which]))} % (${range(decode[which])})`,
        `${bareModelPct[which].toFixed(2)} %`,
        `${((med(node) + med(ff)) / bare).toFixed(1)}x`,
      ];
    });
    const perCamera = (scene: Scene) => {
      const all = phases[scene].flat();
      return med(all.map((x) => x.nodePct)) + med(all.map((x) => x.ffmpegPct));
    };
    return [
      RECOGNITION === 'all' ? '## The real shop-PC agent on a 720p door camera' : `## The real shop-PC agent on a 720p door camera (recognition ${RECOGNITION})`,
      '',
      `\`footfall agent\` (built CLI, its own process, enrolled with \`footfall enrol\` to a real head office, with its systemd unit's node flags and environment: ${[...serviceNodeArgs(), ...Object.entries(serviceEnvironment()).map(([k, v]) => `${k}=${v}`)].join(' ')}) on one camera: a local RTSP server ` +
        `(node, ffmpeg as the source) playing a ${WIDTH}x${HEIGHT} 25-fps H.264 door video made from the registry photos (one woman cut out of ${SHOWINGS.map((x) => x.photo).join(' and ')}: in the doorway ${HOLD_S} s, ` +
        `then the empty door ${EMPTY_S} s, sensor noise throughout; in the large-faces video she stands close, her face 350-400 px wide), detect_fps ${DETECT_FPS}, the camera's default max_width ${WIDTH}. ` +
        `One-second /proc samples over ${SAMPLE_S} s per phase after ${SETTLE_S} s settling, ${ROUNDS} rounds of (${SCENES.join(', ')}), the camera switched by PATCH. ` +
        `CPU in % of one core. Bare reference in the same run: ffmpeg alone on the same stream with capture's arguments (output to /dev/null), and the ` +
        `fewest model calls the frames need, bare on one thread (detector ${perCall.detect!.toFixed(2)} ms on every frame; landmarks ${perCall.landmark!.toFixed(2)} ms + ` +
        `embedding ${perCall.feature!.toFixed(2)} ms once per frame with a face). Visits recorded at head office during the run: ${visitCount}. ` +
        `Load average before / after: ${loadBefore} → ${loadAfter} (2 cores shared with other work).`,
      '',
      table(['scene', 'agent node process CPU (median of 1-s samples)', 'RSS MiB (median)', 'its ffmpeg', 'bare ffmpeg decode', 'bare model calls', '(node + ffmpeg) / bare'], rows),
      '',
      ...SCENES.filter((x) => x !== 'empty').map((x) => `Cameras per core (${x} scene, node + ffmpeg per camera = ${f1(perCamera(x))} % of a core): **${(100 / perCamera(x)).toFixed(1)}**.`),
    ].join('\n');
  } finally {
    await stopProcesses(procs, server);
    if (!PROFILE) fs.rmSync(tmp, { recursive: true, force: true });
  }
}
