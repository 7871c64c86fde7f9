/**
 * Contact sheets for labelling a real clip by hand (bench/real-footage/LABELLING.md):
 *
 *   npx tsx bench/real-footage/sheets.ts <clip id | file.mp4> <out dir> [--fps 5] [--from S] [--to S]
 *        [--cols 4] [--rows 3] [--width 320] [--line ax,ay,bx,by,inside]
 *
 * Frames at `--fps` (default 5, so every tile is 0.2 s after the one before), each with its time from the clip's
 * start (seconds, one decimal) in the top-left corner and the counting line drawn on it (red, with a small "IN"
 * on the inside side and "a" at its first point), scaled to `--width` px and tiled `--cols` x `--rows` per PNG,
 * left to right then top to bottom: `<out>/sheet-000.png`, ... Each sheet's first time is in `<out>/index.txt`.
 * A clip id reads its file and line from bench/real-footage/clips.json; a file needs `--line`.
 * Writes outside the repo (e.g. /tmp/sheets/<id>/); nothing here is committed output.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { loadClips, type RealClip } from './clips.js';

type Line = RealClip['line'];

const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf';

/** Width, height and duration (s) of a video's first stream. */
export function probe(file: string): { width: number; height: number; duration: number } {
  const out = execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height:format=duration', '-of', 'json', file], { encoding: 'utf8' });
  const j = JSON.parse(out) as { streams: { width: number; height: number }[]; format: { duration: string } };
  return { width: j.streams[0]!.width, height: j.streams[0]!.height, duration: Number(j.format.duration) };
}

/** A transparent PNG the size of the picture with the counting line drawn on it. */
export async function lineOverlay(width: number, height: number, line: Line): Promise<Buffer> {
  const [ax, ay] = [line.a[0] * width, line.a[1] * height];
  const [bx, by] = [line.b[0] * width, line.b[1] * height];
  // The inside side: walking from a to b in the picture (y down), "right" is where (b-a) x (p-a) > 0.
  const [dx, dy] = [bx - ax, by - ay];
  const len = Math.hypot(dx, dy);
  const sign = line.inside === 'right' ? 1 : -1;
  const [nx, ny] = [(-dy / len) * sign, (dx / len) * sign];
  const off = Math.max(24, height * 0.1);
  const [mx, my] = [(ax + bx) / 2, (ay + by) / 2];
  const stroke = Math.max(3, Math.round(height / 120));
  const fontSize = Math.max(18, Math.round(height / 12));
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
  <line x1="${ax}" y1="${ay}" x2="${bx}" y2="${by}" stroke="red" stroke-width="${stroke}" stroke-opacity="0.8"/>
  <line x1="${mx}" y1="${my}" x2="${mx + nx * off}" y2="${my + ny * off}" stroke="red" stroke-width="${stroke}" stroke-opacity="0.8"/>
  <text x="${mx + nx * off * 1.6}" y="${my + ny * off * 1.6}" font-family="DejaVu Sans" font-weight="bold" font-size="${fontSize}" fill="red" text-anchor="middle" dominant-baseline="middle">IN</text>
  <text x="${ax}" y="${ay}" font-family="DejaVu Sans" font-size="${fontSize}" fill="red" dx="4" dy="-4">a</text>
</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export interface SheetOptions {
  fps?: number;
  from?: number;
  to?: number;
  cols?: number;
  rows?: number;
  width?: number;
}

/** The ffmpeg arguments that write the sheets of `file` (overlay PNG as the second input) into `outDir`. */
export function sheetArgs(file: string, overlay: string, outDir: string, o: SheetOptions = {}): string[] {
  const fps = o.fps ?? 5;
  const [cols, rows, width] = [o.cols ?? 4, o.rows ?? 3, o.width ?? 320];
  const trim = o.from !== undefined || o.to !== undefined ? `trim=start=${o.from ?? 0}${o.to !== undefined ? `:end=${o.to}` : ''},` : '';
  // Time to 0.1 s from the clip's start (the fps filter keeps the source's times; frame i at i/fps).
  const stamp = `%{eif\\:floor(round(t*10)/10)\\:d}.%{eif\\:mod(round(t*10)\\,10)\\:d}s`;
  const graph =
    `[0:v]${trim}fps=${fps}[f];[f][1:v]overlay=0:0,` +
    `drawtext=fontfile=${FONT}:text='${stamp}':x=6:y=6:fontsize=h/11:fontcolor=yellow:box=1:boxcolor=black@0.7:boxborderw=4,` +
    `scale=${width}:-2,tile=${cols}x${rows}:padding=2:color=white`;
  return ['-v', 'error', '-y', '-i', file, '-i', overlay, '-filter_complex', graph, '-fps_mode', 'passthrough', path.join(outDir, 'sheet-%03d.png')];
}

export async function makeSheets(file: string, line: Line, outDir: string, o: SheetOptions = {}): Promise<string[]> {
  const { width, height, duration } = probe(file);
  fs.mkdirSync(outDir, { recursive: true });
  for (const f of fs.readdirSync(outDir)) if (/^sheet-\d+\.png$/.test(f)) fs.rmSync(path.join(outDir, f));
  const overlay = path.join(outDir, 'line.png');
  fs.writeFileSync(overlay, await lineOverlay(width, height, line));
  execFileSync('ffmpeg', sheetArgs(file, overlay, outDir, o), { stdio: 'inherit' });
  const per = ((o.cols ?? 4) * (o.rows ?? 3)) / (o.fps ?? 5);
  const sheets = fs.readdirSync(outDir).filter((f) => /^sheet-\d+\.png$/.test(f)).sort();
  const from = o.from ?? 0;
  fs.writeFileSync(
    path.join(outDir, 'index.txt'),
    `${file} ${width}x${height} ${duration.toFixed(1)} s, line ${JSON.stringify(line)}\n` +
      sheets.map((s, i) => `${s}  ${(from + i * per).toFixed(1)}-${(from + (i + 1) * per - 1 / (o.fps ?? 5)).toFixed(1)} s`).join('\n') +
      '\n',
  );
  return sheets.map((s) => path.join(outDir, s));
}

function parseArgs(argv: string[]): { target: string; out: string; opts: SheetOptions; line?: Line } {
  const pos: string[] = [];
  const opts: SheetOptions = {};
  let line: Line | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = () => argv[++i] ?? '';
    if (a === '--fps') opts.fps = Number(v());
    else if (a === '--from') opts.from = Number(v());
    else if (a === '--to') opts.to = Number(v());
    else if (a === '--cols') opts.cols = Number(v());
    else if (a === '--rows') opts.rows = Number(v());
    else if (a === '--width') opts.width = Number(v());
    else if (a === '--line') {
      const p = v().split(',');
      line = { a: [Number(p[0]), Number(p[1])], b: [Number(p[2]), Number(p[3])], inside: p[4] === 'left' ? 'left' : 'right' };
    } else pos.push(a);
  }
  if (pos.length !== 2) throw new Error('usage: sheets.ts <clip id | file.mp4> <out dir> [--fps 5] [--from S] [--to S] [--cols 4] [--rows 3] [--width 320] [--line ax,ay,bx,by,inside]');
  return { target: pos[0]!, out: pos[1]!, opts, line };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const { target, out, opts, line } = parseArgs(process.argv.slice(2));
  let file = target;
  let l = line;
  if (!fs.existsSync(target)) {
    const clip = loadClips().find((c) => c.id === target);
    if (!clip) throw new Error(`no clip ${target} in bench/real-footage/clips.json and no such file`);
    file = clip.file;
    l ??= clip.line;
  }
  if (!l) throw new Error('a file needs --line ax,ay,bx,by,inside');
  const sheets = await makeSheets(path.resolve(file), l, out, opts);
  console.log(`${sheets.length} sheets in ${out} (index.txt lists each sheet's times)`);
}
