import { describe, expect, it } from 'vitest';
import { ARCFACE_112, alignmentTransform, applyAffine, estimatePose, fivePointsFrom68, invertAffine, similarityTransform } from './align.js';
import { decodeDetections, iou, nms } from './detect.js';
import { cropResize, cropRgb, cropToTensor, imageToTensor, laplacianVariance, rectToSource, resizeToTensor, rgbLaplacianVariance, supersampling, toGrey, warpAffine, warpFootprint, warpFromRegion } from './image.js';
import type { Affine, PixelWindow, Rect, TensorFormat } from './image.js';
import { sharpnessWindow } from './quality.js';
import { SimdTensors } from './simd.js';
import type { FivePoints, Point, RgbImage } from './types.js';

/** Rotate by `deg`, scale by `s`, then translate: the similarity we expect to recover. */
function similarity(deg: number, s: number, tx: number, ty: number): Affine {
  const a = s * Math.cos((deg * Math.PI) / 180);
  const b = s * Math.sin((deg * Math.PI) / 180);
  return [a, -b, tx, b, a, ty];
}

function close(a: readonly number[], b: readonly number[], eps = 1e-6): void {
  expect(a.length).toBe(b.length);
  a.forEach((x, i) => expect(x).toBeCloseTo(b[i]!, -Math.log10(eps)));
}

describe('alignment geometry', () => {
  it('recovers a known similarity transform exactly from five points', () => {
    const m = similarity(23, 2.5, 140, -30);
    const from = ARCFACE_112;
    const to = from.map((p) => applyAffine(m, p));
    close(similarityTransform(from, to), m);
  });

  it('is the least-squares fit when the points are noisy (residual orthogonal to the fit)', () => {
    const m = similarity(-12, 0.8, 10, 20);
    const noise: Point[] = [[0.4, -0.3], [-0.2, 0.5], [0.1, 0.1], [-0.5, -0.2], [0.3, 0.4]];
    const to = ARCFACE_112.map((p, i) => {
      const q = applyAffine(m, p);
      return [q[0] + noise[i]![0], q[1] + noise[i]![1]] as const;
    });
    const fit = similarityTransform(ARCFACE_112, to);
    // Perturbing any of the 4 parameters must not lower the squared error.
    const err = (t: Affine): number => ARCFACE_112.reduce((s, p, i) => s + (applyAffine(t, p)[0] - to[i]![0]) ** 2 + (applyAffine(t, p)[1] - to[i]![1]) ** 2, 0);
    const base = err(fit);
    for (const d of [[1e-3, 0, 0, 0], [0, 1e-3, 0, 0], [0, 0, 1e-2, 0], [0, 0, 0, 1e-2]] as const) {
      for (const sign of [1, -1]) {
        const [da, db, dx, dy] = d.map((v) => v * sign) as [number, number, number, number];
        const t: Affine = [fit[0] + da, fit[1] - db, fit[2] + dx, fit[3] + db, fit[4] + da, fit[5] + dy];
        expect(err(t)).toBeGreaterThanOrEqual(base);
      }
    }
    // And it stays close to the true transform.
    expect(Math.hypot(fit[0] - m[0], fit[3] - m[3])).toBeLessThan(0.02);
  });

  it('maps a face\'s five points onto the ArcFace template, and back with the inverse', () => {
    const m = similarity(30, 3.2, 400, 250);
    const face = ARCFACE_112.map((p) => applyAffine(m, p)) as unknown as FivePoints;
    const { toAligned, toFrame } = alignmentTransform(face);
    face.forEach((p, i) => close(applyAffine(toAligned, p), ARCFACE_112[i]!, 1e-4));
    ARCFACE_112.forEach((p, i) => close(applyAffine(toFrame, p), face[i]!, 1e-4));
    close(invertAffine(invertAffine(m)), m);
  });

  it('takes eye centres, nose tip and mouth corners from the 68 iBUG landmarks', () => {
    const pts = new Float32Array(136);
    for (let i = 0; i < 68; i++) {
      pts[2 * i] = i;
      pts[2 * i + 1] = 100 + i;
    }
    const five = fivePointsFrom68(pts);
    close(five[0], [(37 + 38 + 40 + 41) / 4, 100 + (37 + 38 + 40 + 41) / 4]);
    close(five[1], [(43 + 44 + 46 + 47) / 4, 100 + (43 + 44 + 46 + 47) / 4]);
    close(five[2], [30, 130]);
    close(five[3], [(48 + 60) / 2, 100 + (48 + 60) / 2]);
    close(five[4], [(54 + 64) / 2, 100 + (54 + 64) / 2]);
  });

  it('estimates roll from the eye line and yaw from the nose offset', () => {
    const frontal = ARCFACE_112;
    const p0 = estimatePose(frontal);
    expect(Math.abs(p0.yaw)).toBeLessThan(3);
    expect(Math.abs(p0.roll)).toBeLessThan(1);
    const rolled = frontal.map((p) => applyAffine(similarity(20, 1, 0, 0), p)) as unknown as FivePoints;
    expect(estimatePose(rolled).roll).toBeCloseTo(20 + p0.roll, 5);
    expect(estimatePose(rolled).yaw).toBeCloseTo(p0.yaw, 5);
    // Nose moved right by half an eye distance: ~45 degrees towards the image right.
    const half = p0.eyeDistance / 2;
    const turned = [frontal[0], frontal[1], [frontal[2][0] + half, frontal[2][1]], frontal[3], frontal[4]] as unknown as FivePoints;
    expect(estimatePose(turned).yaw).toBeGreaterThan(40);
    expect(estimatePose(turned).yaw).toBeLessThan(50);
  });
});

function gradientImage(w: number, h: number): RgbImage {
  const data = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 3;
      data[i] = x % 256;
      data[i + 1] = y % 256;
      data[i + 2] = (x + y) % 256;
    }
  }
  return { width: w, height: h, data };
}

describe('pixel operations', () => {
  it('warps with a pure translation to the shifted pixels', () => {
    const img = gradientImage(64, 48);
    const out = warpAffine(img, [1, 0, 10, 0, 1, 5], 20, 10);
    for (const [u, v] of [[0, 0], [7, 3], [19, 9]] as const) {
      const o = (v * 20 + u) * 3;
      const s = ((v + 5) * 64 + (u + 10)) * 3;
      expect([out.data[o], out.data[o + 1], out.data[o + 2]]).toEqual([img.data[s], img.data[s + 1], img.data[s + 2]]);
    }
  });

  it('interpolates bilinearly between pixels and repeats the edge outside', () => {
    const img = gradientImage(64, 48);
    const half = warpAffine(img, [1, 0, 10.5, 0, 1, 5], 4, 1);
    expect(half.data[0]).toBe(11); // 10.5 rounds half up
    const outside = warpAffine(img, [1, 0, -20, 0, 1, -20], 2, 2);
    expect([outside.data[0], outside.data[1]]).toEqual([0, 0]);
  });

  it('a 2:1 stretch of a whole frame into a tensor averages pixel pairs and normalises', () => {
    const img = gradientImage(8, 4);
    const t = resizeToTensor(img, 4, 2, { colour: 'RGB', mean: [127, 127, 127], std: [128, 128, 128] });
    // Output (0,0) covers source x 0..1, y 0..1: R mean 0.5, G mean 0.5.
    expect(t[0]).toBeCloseTo((0.5 - 127) / 128, 2);
    expect(t[8]).toBeCloseTo((0.5 - 127) / 128, 2);
    const bgr = resizeToTensor(img, 4, 2, { colour: 'BGR', mean: [0, 0, 0], std: [1, 1, 1] });
    expect(bgr[0]).toBeCloseTo(1, 2); // plane 0 is blue: (x+y) averaged over the 2x2 block = 1
  });

  it('a whole-number shrink (4 x 3 blocks, as 1280x720 into 320x240) is the exact block mean, normalised', () => {
    const w = 16;
    const h = 9;
    const data = new Uint8Array(w * h * 3);
    for (let i = 0; i < data.length; i++) data[i] = (i * 37 + 11) % 256;
    const img: RgbImage = { width: w, height: h, data };
    const fmt: TensorFormat = { colour: 'BGR', mean: [10, 20, 30], std: [50, 60, 70] };
    const t = resizeToTensor(img, 4, 3, fmt);
    for (let v = 0; v < 3; v++) {
      for (let u = 0; u < 4; u++) {
        for (const [plane, ch] of [[0, 2], [1, 1], [2, 0]] as const) {
          let sum = 0;
          for (let y = 0; y < 3; y++) for (let x = 0; x < 4; x++) sum += data[((v * 3 + y) * w + u * 4 + x) * 3 + ch]!;
          expect(t[plane * 12 + v * 4 + u]).toBeCloseTo((sum / 12 - fmt.mean[plane]!) / fmt.std[plane]!, 5);
        }
      }
    }
  });

  it('crops and resizes a rectangle', () => {
    const img = gradientImage(100, 100);
    const c = cropResize(img, { x: 20, y: 30, w: 40, h: 40 }, 20, 20);
    expect(c.width).toBe(20);
    // First output pixel covers source 20..21 x 30..31: R ~ 20.5, G ~ 30.5.
    expect(Math.abs(c.data[0]! - 20.5)).toBeLessThanOrEqual(1);
    expect(Math.abs(c.data[1]! - 30.5)).toBeLessThanOrEqual(1);
  });

  it('the Laplacian variance is 0 on flat and linear images and large on a checkerboard', () => {
    const flat = new Float32Array(32 * 32).fill(100);
    expect(laplacianVariance(flat, 32, 32)).toBe(0);
    expect(laplacianVariance(toGrey(gradientImage(32, 32)), 32, 32)).toBeCloseTo(0, 3);
    const check = new Float32Array(32 * 32);
    for (let i = 0; i < check.length; i++) check[i] = ((i % 32) + Math.floor(i / 32)) % 2 ? 255 : 0;
    expect(laplacianVariance(check, 32, 32)).toBeGreaterThan(1e5);
  });
});

/** Deterministic pseudo-random numbers (a fixed LCG), so failures reproduce. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function noiseImage(w: number, h: number, rand: () => number): RgbImage {
  const data = new Uint8Array(w * h * 3);
  for (let i = 0; i < data.length; i++) data[i] = Math.floor(rand() * 256);
  return { width: w, height: h, data };
}

/** The bilinear warp as first written (clamping every sample): what the faster paths must reproduce bit for bit. */
function referenceWarp(img: RgbImage, m: Affine, outW: number, outH: number): Uint8Array {
  const [a, b, c, d, e, f] = m;
  const out = new Uint8Array(outW * outH * 3);
  const src = img.data;
  const maxX = img.width - 1;
  const maxY = img.height - 1;
  const stride = img.width * 3;
  let q = 0;
  for (let v = 0; v < outH; v++) {
    let x = b * v + c;
    let y = e * v + f;
    for (let u = 0; u < outW; u++, x += a, y += d, q += 3) {
      const xc = x < 0 ? 0 : x > maxX ? maxX : x;
      const yc = y < 0 ? 0 : y > maxY ? maxY : y;
      const x0 = xc | 0;
      const y0 = yc | 0;
      const fx = xc - x0;
      const fy = yc - y0;
      const dx = x0 < maxX ? 3 : 0;
      const dy = y0 < maxY ? stride : 0;
      const p = y0 * stride + x0 * 3;
      const w00 = (1 - fx) * (1 - fy);
      const w01 = fx * (1 - fy);
      const w10 = (1 - fx) * fy;
      const w11 = fx * fy;
      for (let ch = 0; ch < 3; ch++) out[q + ch] = src[p + ch]! * w00 + src[p + dx + ch]! * w01 + src[p + dy + ch]! * w10 + src[p + dy + dx + ch]! * w11 + 0.5;
    }
  }
  return out;
}

/** The supersampled warp as first written (every sample's position computed on its own): the reference for the faster one. */
function referenceSupersampled(img: RgbImage, m: Affine, k: number, outW: number, outH: number): Uint8Array {
  const [a, b, c, d, e, f] = m;
  const out = new Uint8Array(outW * outH * 3);
  const src = img.data;
  const maxX = img.width - 1;
  const maxY = img.height - 1;
  const stride = img.width * 3;
  for (let v = 0; v < outH; v++) {
    for (let u = 0; u < outW; u++) {
      const sum = [0, 0, 0];
      for (let sy = 0; sy < k; sy++) {
        const vv = v + (sy + 0.5) / k - 0.5;
        for (let sx = 0; sx < k; sx++) {
          const uu = u + (sx + 0.5) / k - 0.5;
          const x = Math.min(Math.max(a * uu + b * vv + c, 0), maxX);
          const y = Math.min(Math.max(d * uu + e * vv + f, 0), maxY);
          const x0 = x | 0;
          const y0 = y | 0;
          const fx = x - x0;
          const fy = y - y0;
          const dx = x0 < maxX ? 3 : 0;
          const dy = y0 < maxY ? stride : 0;
          const p = y0 * stride + x0 * 3;
          const w = [(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy] as const;
          for (let ch = 0; ch < 3; ch++) sum[ch] = sum[ch]! + (src[p + ch]! * w[0] + src[p + dx + ch]! * w[1] + src[p + dy + ch]! * w[2] + src[p + dy + dx + ch]! * w[3]);
        }
      }
      for (let ch = 0; ch < 3; ch++) out[(v * outW + u) * 3 + ch] = sum[ch]! * (1 / (k * k)) + 0.5;
    }
  }
  return out;
}

function sameBits(a: Float32Array | Uint8Array, b: Float32Array | Uint8Array): void {
  expect(a.length).toBe(b.length);
  let diff = 0;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) diff++;
  expect(diff).toBe(0);
}

describe('the fast pixel paths give exactly the results of the plain ones', () => {
  const rand = lcg(7);
  const img = noiseImage(160, 90, rand);
  const formats: TensorFormat[] = [
    { colour: 'grey', mean: [0], std: [256] },
    { colour: 'RGB', mean: [127.5, 127.5, 127.5], std: [128, 128, 128] },
    { colour: 'BGR', mean: [103.9, 116.8, 123.7], std: [57.4, 57.1, 58.4] },
  ];

  it('warpAffine (rows inside the image and rows crossing its edge)', () => {
    for (let i = 0; i < 60; i++) {
      const angle = (rand() - 0.5) * 1.2;
      const scale = 0.3 + rand() * 1.6; // up to 1.9: the bilinear path
      const m: Affine = [scale * Math.cos(angle), -scale * Math.sin(angle), rand() * 200 - 40, scale * Math.sin(angle), scale * Math.cos(angle), rand() * 120 - 30];
      sameBits(warpAffine(img, m, 37, 29).data, referenceWarp(img, m, 37, 29));
    }
  });

  it('the supersampled warpAffine (shrinks over 2x, as a 400-px face into 112x112) against the plain one', () => {
    const big = noiseImage(640, 360, rand);
    for (let i = 0; i < 30; i++) {
      const angle = (rand() - 0.5) * 1.2;
      const scale = 2.05 + rand() * 5; // k = 2 to 6
      const m: Affine = [scale * Math.cos(angle), -scale * Math.sin(angle), rand() * 700 - 100, scale * Math.sin(angle), scale * Math.cos(angle), rand() * 400 - 100];
      sameBits(warpAffine(big, m, 37, 29).data, referenceSupersampled(big, m, supersampling(m), 37, 29));
    }
  });

  /** Random similarity maps of a 112x112 output onto the test image: bilinear (scale < 2) and supersampled. */
  function faceMaps(n: number, maxScale: number): Affine[] {
    return Array.from({ length: n }, () => {
      const angle = (rand() - 0.5) * 1.2;
      const scale = 0.2 + rand() * maxScale;
      return [scale * Math.cos(angle), -scale * Math.sin(angle), rand() * 200 - 40, scale * Math.sin(angle), scale * Math.cos(angle), rand() * 120 - 30] as Affine;
    });
  }

  /** The pixels of `win` in an RGB image `w` wide. */
  function windowOf(data: Uint8Array, w: number, win: PixelWindow): Uint8Array {
    const rows: number[] = [];
    for (let v = win.v0; v < win.v1; v++) rows.push(...data.subarray((v * w + win.u0) * 3, (v * w + win.u1) * 3));
    return Uint8Array.from(rows);
  }

  it('a warp window (the sharpness region) is exactly that part of the whole warp, bilinear and supersampled', () => {
    const win = sharpnessWindow(112);
    expect(win).toEqual({ u0: 23, v0: 35, u1: 89, v1: 105 });
    for (const m of faceMaps(40, 3.5)) {
      const whole = warpAffine(img, m, 112, 112).data;
      const part = warpAffine(img, m, 112, 112, { window: win, into: new Uint8Array(112 * 112 * 3) }).data;
      sameBits(windowOf(part, 112, win), windowOf(whole, 112, win));
    }
    expect(() => warpAffine(img, faceMaps(1, 1)[0]!, 112, 112, { window: { u0: 0, v0: 0, u1: 113, v1: 10 } })).toThrow(/not inside/);
  });

  it('a warp from a cut-out region holding its footprint is exactly the warp of the whole frame (also at the edges)', () => {
    const maps = [...faceMaps(40, 3.5), [1, 0, -30, 0, 1, -20] as Affine, [0.5, 0, 120, 0, 0.5, 60] as Affine];
    for (const m of maps) {
      const fp = warpFootprint(m, { u0: 0, v0: 0, u1: 112, v1: 112 }, img.width - 1, img.height - 1);
      const region = cropRgb(img, { x: fp.x0, y: fp.y0, w: fp.x1 + 1 - fp.x0, h: fp.y1 + 1 - fp.y0 });
      sameBits(warpFromRegion(region, m, 112, 112).data, warpAffine(img, m, 112, 112).data);
    }
    // A region that misses part of the footprint is refused, not read past its end.
    const m: Affine = [1, 0, 40, 0, 1, 10];
    const small = cropRgb(img, { x: 45, y: 15, w: 60, h: 60 });
    expect(() => warpFromRegion(small, m, 112, 112)).toThrow(/does not hold the warp's footprint/);
  });

  it('cropToTensor against cropping, then converting (grey, RGB, BGR; inside, across the edge, up- and downscaled)', () => {
    const rects: Rect[] = [
      { x: 20.3, y: 10.7, w: 50.2, h: 61.9 },
      { x: -12.5, y: -8, w: 40, h: 40 },
      { x: 130.2, y: 60.1, w: 45, h: 45 },
      { x: 40, y: 20, w: 9.5, h: 12.25 },
      { x: 0, y: 0, w: 160, h: 90 },
      { x: 3, y: 4, w: 150, h: 80 }, // more than 2x smaller at 64x32: the supersampled path
    ];
    for (const fmt of formats) {
      for (const r of rects) {
        const channels = fmt.colour === 'grey' ? 1 : 3;
        const two = imageToTensor({ width: 64, height: 32, data: r.w / 64 > 2 ? warpAffine(img, rectToSource(r, 64, 32), 64, 32).data : referenceWarp(img, rectToSource(r, 64, 32), 64, 32) }, fmt);
        const one = cropToTensor(img, r, 64, 32, fmt, new Float32Array(64 * 32 * channels));
        sameBits(one, two);
      }
    }
  });

  it('rgbLaplacianVariance against grey conversion of the whole image', () => {
    for (const roi of [undefined, { x: 24, y: 36, w: 64, h: 68 }, { x: 100, y: 50, w: 100, h: 100 }]) {
      expect(rgbLaplacianVariance(img, roi)).toBe(laplacianVariance(toGrey(img), img.width, img.height, roi));
    }
  });

  it('the 4 x 3 block shrink read by words (1280x720 into 320x240) against the byte-by-byte one', () => {
    for (const [w, h, ow, oh] of [[1280, 720, 320, 240], [16, 9, 4, 3], [40, 6, 10, 2]] as const) {
      const frame = noiseImage(w, h, rand);
      // A copy one byte into its buffer cannot be read as 32-bit words: the byte-by-byte sums.
      const unaligned = new Uint8Array(frame.data.length + 1).subarray(1);
      unaligned.set(frame.data);
      for (const fmt of formats.slice(1)) {
        sameBits(resizeToTensor(frame, ow, oh, fmt), resizeToTensor({ width: w, height: h, data: unaligned }, ow, oh, fmt));
      }
    }
    // White pixels: every 16-bit lane at its largest (3 x 255), no carry into the next lane.
    const white = { width: 8, height: 3, data: new Uint8Array(8 * 3 * 3).fill(255) };
    expect([...resizeToTensor(white, 2, 1, { colour: 'RGB', mean: [0, 0, 0], std: [1, 1, 1] })]).toEqual([255, 255, 255, 255, 255, 255]);
  });

  const simd = SimdTensors.create();
  it.skipIf(!simd)('the WebAssembly SIMD detector tensor against resizeToTensor', () => {
    for (const [w, h] of [[640, 360], [640, 480], [640, 240], [16, 7]] as const) {
      const frame = noiseImage(w, h, rand);
      const [ow, oh] = w === 16 ? [8, 4] : [320, 240];
      for (const fmt of formats.slice(1)) {
        expect(SimdTensors.handles(frame, ow, oh, fmt)).toBe(true);
        sameBits(simd!.detectorTensor(frame, ow, oh, fmt), resizeToTensor(frame, ow, oh, fmt));
      }
    }
    expect(SimdTensors.handles(noiseImage(704, 576, rand), 320, 240, formats[1]!)).toBe(false);
  });
});

describe('detection post-processing', () => {
  it('IoU and greedy NMS keep the best of overlapping boxes', () => {
    const a = { x1: 0, y1: 0, x2: 10, y2: 10 };
    const b = { x1: 5, y1: 0, x2: 15, y2: 10 };
    expect(iou(a, b)).toBeCloseTo(50 / 150);
    expect(iou(a, { x1: 20, y1: 20, x2: 30, y2: 30 })).toBe(0);
    const kept = nms([{ box: a, score: 0.8 }, { box: { x1: 1, y1: 1, x2: 11, y2: 11 }, score: 0.9 }, { box: { x1: 50, y1: 50, x2: 60, y2: 60 }, score: 0.7 }], 0.4);
    expect(kept.map((k) => k.score)).toEqual([0.9, 0.7]);
  });

  it('decodes scores and normalised boxes into frame pixels above the threshold', () => {
    const scores = new Float32Array([0.9, 0.1, 0.05, 0.95, 0.2, 0.8]);
    const boxes = new Float32Array([0, 0, 0.1, 0.1, 0.5, 0.25, 0.75, 0.75, 0.5, 0.26, 0.75, 0.76]);
    const d = decodeDetections(scores, boxes, 640, 360, { scoreThreshold: 0.7, nmsIou: 0.4, topK: 10, minSize: 8 });
    expect(d).toHaveLength(1);
    expect(d[0]!.score).toBeCloseTo(0.95);
    expect(d[0]!.box).toEqual({ x1: 320, y1: 90, x2: 480, y2: 270 });
  });
});
