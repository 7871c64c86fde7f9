/**
 * The person detector benchmark's labelled set: 640x360 "door" scenes made from shippable material. A drawn shop
 * entrance (walls, glass door, floor, mat; an SVG rendered by sharp) with cut-outs of the registry group photos
 * (agent/fixtures/registry-photos.ts) pasted at known places and sizes; every person in a cut-out is known from the
 * hand-drawn boxes in agent/fixtures/photo-people.ts. Deterministic (seeded), so every run measures the same frames.
 *
 * Truth: a labelled person counts when at least 60 % of their box is inside the cut-out; one with 20-60 % inside is
 * "don't care" (a detection on them is neither right nor wrong); less is ignored.
 */
import sharp from 'sharp';
import type { RawImage } from '../agent/capture/ppm.js';
import { PHOTO_PEOPLE } from '../agent/fixtures/photo-people.js';
import type { Corners } from '../agent/fixtures/photo-people.js';
import { ensureTestPhotos, TEST_PHOTOS } from '../agent/fixtures/registry-photos.js';

export const SCENE_WIDTH = 640;
export const SCENE_HEIGHT = 360;
const VISIBLE = 0.6;
const DONT_CARE = 0.2;

/** A box in pixels of the scene. */
export interface PixelBox {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface Scene {
  image: RawImage;
  /** People who must be found. */
  people: PixelBox[];
  /** Partly visible people: detections on them are not counted either way. */
  dontCare: PixelBox[];
  description: string;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The empty shop entrance, `tone` varying the light (0.8..1.1). */
function backgroundSvg(tone: number): string {
  const c = (r: number, g: number, b: number) => `rgb(${Math.round(Math.min(255, r * tone))},${Math.round(Math.min(255, g * tone))},${Math.round(Math.min(255, b * tone))})`;
  const W = SCENE_WIDTH;
  const H = SCENE_HEIGHT;
  const tiles: string[] = [];
  for (let i = 0; i <= 16; i++) tiles.push(`<line x1="${W / 2 + (i - 8) * 14}" y1="250" x2="${(i - 8) * 110 + W / 2}" y2="${H}" stroke="${c(150, 145, 140)}" stroke-width="1"/>`);
  for (const y of [262, 280, 305, 338]) tiles.push(`<line x1="0" y1="${y}" x2="${W}" y2="${y}" stroke="${c(150, 145, 140)}" stroke-width="1"/>`);
  return `<svg width="${W}" height="${H}" xmlns="http://www.w3.org/2000/svg">
  <rect width="${W}" height="250" fill="${c(214, 205, 188)}"/>
  <rect y="250" width="${W}" height="${H - 250}" fill="${c(176, 170, 162)}"/>
  ${tiles.join('\n  ')}
  <rect x="200" y="30" width="240" height="222" fill="${c(70, 72, 78)}"/>
  <rect x="210" y="40" width="106" height="210" fill="${c(160, 190, 205)}"/>
  <rect x="324" y="40" width="106" height="210" fill="${c(150, 182, 200)}"/>
  <rect x="300" y="130" width="8" height="40" fill="${c(190, 190, 190)}"/>
  <rect x="332" y="130" width="8" height="40" fill="${c(190, 190, 190)}"/>
  <rect x="30" y="60" width="120" height="90" fill="${c(120, 80, 60)}"/>
  <rect x="38" y="68" width="104" height="74" fill="${c(235, 228, 210)}"/>
  <rect x="500" y="40" width="110" height="200" fill="${c(190, 180, 165)}"/>
  <rect x="508" y="50" width="94" height="8" fill="${c(120, 110, 100)}"/>
  <rect x="508" y="110" width="94" height="8" fill="${c(120, 110, 100)}"/>
  <rect x="508" y="170" width="94" height="8" fill="${c(120, 110, 100)}"/>
  <polygon points="230,262 410,262 450,300 190,300" fill="${c(90, 60, 50)}"/>
</svg>`;
}

interface Patch {
  photo: number;
  /** Region of the photo, 0..1. */
  region: Corners;
  /** Where it goes in the scene, pixels. */
  left: number;
  top: number;
  width: number;
  height: number;
}

function planPatch(r: () => number, maxWidth: number): Omit<Patch, 'left' | 'top'> | undefined {
  const photo = Math.floor(r() * TEST_PHOTOS.length);
  const p = TEST_PHOTOS[photo]!;
  const boxes = PHOTO_PEOPLE[p.file]!;
  const first = Math.floor(r() * boxes.length);
  const last = Math.min(boxes.length - 1, first + Math.floor(r() * 3));
  const run = boxes.slice(first, last + 1);
  const pad = 0.02;
  const region: Corners = [
    Math.max(0, Math.min(...run.map((b) => b[0])) - pad),
    Math.max(0, Math.min(...run.map((b) => b[1])) - pad),
    Math.min(1, Math.max(...run.map((b) => b[2])) + pad),
    Math.min(1, Math.max(...run.map((b) => b[3])) + pad),
  ];
  const regionW = (region[2] - region[0]) * p.width;
  const regionH = (region[3] - region[1]) * p.height;
  let height = Math.round(SCENE_HEIGHT * (0.4 + 0.55 * r()));
  let width = Math.round((regionW / regionH) * height);
  if (width > maxWidth) {
    height = Math.round((height * maxWidth) / width);
    width = maxWidth;
  }
  if (height < 60 || width < 24) return undefined;
  return { photo, region, width, height };
}

function truthOf(patches: readonly Patch[]): { people: PixelBox[]; dontCare: PixelBox[] } {
  const people: PixelBox[] = [];
  const dontCare: PixelBox[] = [];
  for (const t of patches) {
    const [rx1, ry1, rx2, ry2] = t.region;
    for (const b of PHOTO_PEOPLE[TEST_PHOTOS[t.photo]!.file]!) {
      const ix1 = Math.max(b[0], rx1);
      const iy1 = Math.max(b[1], ry1);
      const ix2 = Math.min(b[2], rx2);
      const iy2 = Math.min(b[3], ry2);
      if (ix2 <= ix1 || iy2 <= iy1) continue;
      const visible = ((ix2 - ix1) * (iy2 - iy1)) / ((b[2] - b[0]) * (b[3] - b[1]));
      if (visible < DONT_CARE) continue;
      const sx = t.width / (rx2 - rx1);
      const sy = t.height / (ry2 - ry1);
      const box = { x1: t.left + (ix1 - rx1) * sx, y1: t.top + (iy1 - ry1) * sy, x2: t.left + (ix2 - rx1) * sx, y2: t.top + (iy2 - ry1) * sy };
      (visible >= VISIBLE ? people : dontCare).push(box);
    }
  }
  return { people, dontCare };
}

/**
 * `count` scenes: every sixth is the empty entrance (only the light changes), the others have one or two cut-outs
 * of one to three people each, 40-95 % of the frame's height, standing on the floor, side by side.
 */
export async function makeScenes(count: number, seed = 20): Promise<Scene[]> {
  const { files } = await ensureTestPhotos();
  const r = rng(seed);
  const scenes: Scene[] = [];
  const photoCache = new Map<number, Buffer>();
  for (let n = 0; n < count; n++) {
    const tone = 0.8 + 0.3 * r();
    const patches: Patch[] = [];
    if (n % 6 !== 5) {
      const two = r() < 0.4;
      const slots = two ? [[0, SCENE_WIDTH / 2], [SCENE_WIDTH / 2, SCENE_WIDTH]] : [[0, SCENE_WIDTH]];
      for (const [from, to] of slots as [number, number][]) {
        const plan = planPatch(r, Math.round((to - from) * 0.95));
        if (!plan) continue;
        const left = Math.round(from + r() * (to - from - plan.width));
        const bottom = Math.round(SCENE_HEIGHT * (0.82 + 0.18 * r()));
        const top = Math.max(0, Math.min(bottom, SCENE_HEIGHT) - plan.height);
        patches.push({ ...plan, left, top });
      }
    }
    const layers: sharp.OverlayOptions[] = [];
    for (const t of patches) {
      const p = TEST_PHOTOS[t.photo]!;
      let src = photoCache.get(t.photo);
      if (!src) {
        src = await sharp(files[t.photo]!).toBuffer();
        photoCache.set(t.photo, src);
      }
      const ext = {
        left: Math.round(t.region[0] * p.width),
        top: Math.round(t.region[1] * p.height),
        width: Math.round((t.region[2] - t.region[0]) * p.width),
        height: Math.round((t.region[3] - t.region[1]) * p.height),
      };
      ext.width = Math.min(ext.width, p.width - ext.left);
      ext.height = Math.min(ext.height, p.height - ext.top);
      const cut = await sharp(src).extract(ext).resize(t.width, t.height, { fit: 'fill' }).toBuffer();
      layers.push({ input: cut, left: t.left, top: t.top });
    }
    const { data, info } = await sharp(Buffer.from(backgroundSvg(tone)))
      .composite(layers)
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    // Sharp composites in one pipeline; re-read the composited picture as RGB24 at the scene size.
    if (info.width !== SCENE_WIDTH || info.height !== SCENE_HEIGHT || info.channels !== 3) throw new Error(`scene ${n}: ${info.width}x${info.height}x${info.channels}`);
    const truth = truthOf(patches);
    scenes.push({
      image: { width: SCENE_WIDTH, height: SCENE_HEIGHT, data },
      ...truth,
      description: patches.length === 0 ? 'empty' : patches.map((t) => `${TEST_PHOTOS[t.photo]!.file}@${t.height}px`).join(' + '),
    });
  }
  return scenes;
}
