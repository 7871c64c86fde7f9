/**
 * One shop PC with a door camera AND a face camera (`npm run bench -- door-face`, issue 25: "RSS <= 300 MB with one
 * door camera and one face camera"): the built CLI's `footfall agent`, enrolled to a real head office, with every
 * model (person detector and face models), its systemd unit's environment, and two cameras on local RTSP servers:
 * the door camera (role `door`) on a real labelled clip with its counting line (BENCH_DOOR_FACE_CLIP, default
 * walk-pair-small: 768x576, people crossing most of the time), and the face camera (role `faces`) on agent-real's
 * 720p 25-fps door video (a face in view two thirds of the time). The clip plays once (bench/door-real.ts, session).
 * Reported: the door's counts against its labels, the visits head office stored, the agent's node CPU and RSS
 * (1-s /proc samples), beside door-real's figure for the door camera alone in the same run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_TUNING } from '../shared/agent-api.js';
import { ensureTestBodyModels, ensureTestModels } from '../agent/models/test-cache.js';
import { doorVideos } from './agent-real.js';
import { f1, mean, med, stopProcesses } from './agent-process.js';
import { session, streamLatencyMs } from './door-real.js';
import { api, cli, startHeadOffice, type Proc } from './api.js';
import { loadClips, matchCrossings, truthFor } from './real-footage/clips.js';
import { BENCH_ADMIN, loadAverage, progress, table } from './util.js';

const CLIP = process.env.BENCH_DOOR_FACE_CLIP ?? 'walk-pair-small';

export async function run(): Promise<string | undefined> {
  if (!fs.existsSync(cli)) {
    progress('the built CLI is missing: run `npm run bench -- door-face` (it builds first)');
    return undefined;
  }
  const clip = loadClips().find((c) => c.id === CLIP);
  const truth = truthFor(CLIP);
  if (!clip || !truth) {
    progress(`no labelled clip ${CLIP} in bench/real-footage`);
    return undefined;
  }
  progress('models and the face camera\'s video');
  await Promise.all([ensureTestModels(), ensureTestBodyModels()]);
  const { door: faceVideo } = await doorVideos();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-door-face-'));
  let server: Proc | undefined;
  try {
    const hoDir = path.join(tmp, 'head-office');
    server = await startHeadOffice(hoDir);
    const admin = (await api(server.url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const c = await api(server.url, 'POST', '/api/admin/clients', { company_name: 'Door And Faces', owner_email: 'owner@doorfaces.test', owner_name: 'Owner' }, admin);
    const token = (await api(server.url, 'POST', '/api/auth/login', { email: 'owner@doorfaces.test', password: c.password })).access_token!;
    const latencyMs = await streamLatencyMs(clip, DEFAULT_TUNING.detect_fps, 8);
    const loadBefore = loadAverage();
    const rows: string[][] = [];
    const sessions = [['door camera alone (person model only)', undefined], ['door camera + face camera (every model)', faceVideo]] as const;
    // BENCH_DOOR_FACE_BOTH_ONLY=1: the two-camera session alone (for trying settings).
    for (const [label, face] of process.env.BENCH_DOOR_FACE_BOTH_ONLY === '1' ? sessions.slice(1) : sessions) {
      progress(`${clip.id}: ${label}`);
      const dir = fs.mkdtempSync(path.join(tmp, 'session-'));
      const s = await session(server, token, clip, dir, path.join(hoDir, 'footfall.db'), latencyMs, face);
      const { pairs } = matchCrossings(truth.labels.crossings, s.counted, 1.5);
      const n = (xs: { direction: string }[], d: string) => xs.filter((x) => x.direction === d).length;
      const node = s.samples.map((q) => q.node);
      const rss = s.samples.map((q) => q.rss);
      rows.push([
        label,
        `${n(s.counted, 'in')} / ${n(truth.labels.crossings, 'in')}, ${n(s.counted, 'out')} / ${n(truth.labels.crossings, 'out')}`,
        `${pairs.length} of ${truth.labels.crossings.length}`,
        String(s.visits),
        f1(mean(node)),
        f1(med(rss)),
        f1(Math.max(...rss)),
      ]);
    }
    const loadAfter = loadAverage();
    return [
      '## A door camera and a face camera on one shop PC (door-face)',
      '',
      `\`footfall agent\` (built CLI, its own process, enrolled to a real head office, its systemd unit's node flags and environment): first with the door camera alone and the person model only (as door-real), then with every model and a second camera: ` +
        `the door camera (role \`door\`) on \`${clip.id}\` (${clip.width}x${clip.height} ${clip.fps} fps, ${clip.duration_s} s, its hand-labelled line), the face camera (role \`faces\`) on agent-real's 1280x720 25-fps door video (a face in view two thirds of the time), ` +
        `detect_fps ${DEFAULT_TUNING.detect_fps} on both, the clip played once. CPU in % of one core and RSS over 1-s /proc samples of the agent's node process. Load average before / after: ${loadBefore} → ${loadAfter} (2 cores shared with other work).`,
      '',
      table(['agent', 'door entries, exits (counted / true)', 'crossings matched', 'visits at head office', 'node CPU %', 'RSS MiB (median)', 'RSS MiB (most)'], rows),
    ].join('\n');
  } finally {
    await stopProcesses([], server);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
