/**
 * Replays the looks a door-offline run recorded (DOOR_DUMP=dir: each look's region and boxes) through the tracker
 * and the line again, without the detector: a change to the tracker or the line rule measured on every clip in a
 * second. Not exact against a full run: the looks' regions followed the old tracks (`roi`), and frames held by motion
 * gating are not in the dump (BodyTracker.still is not replayed). Use it to sort ideas, then measure the survivors
 * with door-offline.
 *
 *   npx tsx bench/door-replay.ts /tmp/dumps [REPLAY_TRACE=clip:from:to]
 */
import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, type LineCounterOptions } from '../agent/bodies/line.js';
import { BodyTracker, type BodyTrackerConfig } from '../agent/bodies/tracker.js';
import type { BodyBox } from '../agent/bodies/types.js';
import { DEFAULT_LINE_PER_HEIGHT } from '../agent/runtime/doors.js';
import type { CountingLine } from '../shared/agent-api.js';
import { matchCrossings } from './door-offline.js';

interface Dump {
  id: string;
  line: CountingLine;
  width: number;
  height: number;
  truth: { t: number; direction: 'in' | 'out' }[];
  looks: { t: number; boxes: BodyBox[] }[];
}

const dir = process.argv[2] ?? '/tmp/door-dumps';
const tracker: Partial<BodyTrackerConfig> = process.env.REPLAY_TRACKER ? (JSON.parse(process.env.REPLAY_TRACKER) as Partial<BodyTrackerConfig>) : {};
const line: Partial<LineCounterOptions> = process.env.REPLAY_LINE ? (JSON.parse(process.env.REPLAY_LINE) as Partial<LineCounterOptions>) : {};
const [traceClip, traceFrom, traceTo] = (process.env.REPLAY_TRACE ?? '').split(':');
let tp = 0;
let all = 0;
let fps = 0;
for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.looks.json')).sort()) {
  const d = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Dump;
  const aspect = d.width / d.height;
  const t = new BodyTracker(tracker, aspect);
  const counter = new LineCounter(d.line, { perHeight: DEFAULT_LINE_PER_HEIGHT, aspect, ...line });
  const counted: { seenAt: number; t: number; direction: 'in' | 'out'; id: string }[] = [];
  for (const look of d.looks) {
    const tracks = t.update(look.boxes, look.t * 1000);
    for (const c of counter.update(tracks, new Date(look.t * 1000))) counted.push({ seenAt: look.t, t: c.at.getTime() / 1000, direction: c.direction, id: c.trackId });
    if (traceClip === d.id && look.t >= Number(traceFrom) && look.t <= Number(traceTo)) {
      const s = tracks
        .filter((k) => k.seen)
        .map((k) => `${k.id} x${Math.round((k.box.x + k.box.w / 2) * 1000)} y${Math.round((k.box.y + k.box.h / 2) * 1000)} h${Math.round(k.box.h * 1000)} w${Math.round(k.box.w * 1000)}`)
        .join(' | ');
      console.log(`${look.t.toFixed(1)} [${look.boxes.length}] ${s}${counted.filter((c) => c.seenAt === look.t).map((c) => ` CROSSING ${c.direction} ${c.id}`).join('')}`);
    }
  }
  const m = matchCrossings(d.truth, counted);
  tp += m.tp;
  all += d.truth.length;
  fps += m.fp;
  const ti = d.truth.filter((c) => c.direction === 'in').length;
  if (process.env.REPLAY_VERBOSE) {
    console.log(`  truth ${d.truth.map((c) => `${c.t}${c.direction[0]}`).join(' ')}`);
    console.log(`  counted ${counted.map((c) => `${c.t.toFixed(1)}${c.direction[0]}`).join(' ')}`);
  }
  console.log(
    `${d.id}: in ${counted.filter((c) => c.direction === 'in').length}/${ti} out ${counted.filter((c) => c.direction === 'out').length}/${d.truth.length - ti} tp ${m.tp} fp ${m.fp} fn ${m.fn}`,
  );
}
console.log(`all: tp ${tp}/${all} fp ${fps}`);
