/** The pure parts of capture: URL and redaction, reasons from ffmpeg's words, PPM splitting, backoff, filters. */
import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegMajor, npmFfmpeg, resolveFfmpeg } from './ffmpeg-bin.js';
import { LineTail, decodeArgs, hasCredentials, videoFilter, writeStreamScript } from './ffmpeg.js';
import { PictureBuffers, PpmReader, type RawImage } from './ppm.js';
import { explainFfmpeg } from './reasons.js';
import { describeSource, redact, rtspUrl } from './source.js';

describe('rtspUrl and redact', () => {
  it('joins the parts, URL-encoding user and password', () => {
    expect(rtspUrl({ host: '192.168.1.64', port: 554, path: '/Streaming/Channels/101', username: 'admin', password: 'p@ss:w/rd' })).toBe(
      'rtsp://admin:p%40ss%3Aw%2Frd@192.168.1.64:554/Streaming/Channels/101',
    );
    expect(rtspUrl({ host: 'cam.local', port: 8554, path: 'live?channel=1&subtype=0' })).toBe('rtsp://cam.local:8554/live?channel=1&subtype=0');
    expect(rtspUrl({ host: 'fe80::1', port: 554, path: '', username: 'u', password: '' })).toBe('rtsp://u@[fe80::1]:554');
  });

  it('never lets a password through', () => {
    const source = { host: '10.0.0.5', port: 554, path: '/h264', username: 'admin', password: 'Secr3t#x' };
    expect(describeSource(source)).toBe('rtsp://admin:***@10.0.0.5:554/h264');
    const line = `[rtsp @ 0x1] method DESCRIBE failed: 401 Unauthorized\nrtsp://admin:Secr3t#x@10.0.0.5:554/h264: Server returned 401`;
    expect(redact(line, [source.password])).not.toContain('Secr3t');
    expect(redact('tried Secr3t%23x and Secr3t#x', [source.password])).toBe('tried *** and ***');
    // A very short password is only hidden inside URLs, so messages stay readable.
    expect(redact('rtsp://a:1@h:554/x frame 1 of 10', ['1'])).toBe('rtsp://a:***@h:554/x frame 1 of 10');
  });
});

describe('explainFfmpeg', () => {
  const cases: [string[], string, string][] = [
    [['[rtsp @ 0x5] method DESCRIBE failed: 401 Unauthorized', 'rtsp://a:***@h:554/x: Server returned 401 Unauthorized (authorization failed)'], 'auth_failed', 'wrong password'],
    [['[rtsp @ 0x5] method DESCRIBE failed: 404 Not Found', 'rtsp://h:554/x: Server returned 404 Not Found'], 'no_stream', 'stream path not found'],
    [['[rtsp @ 0x5] method DESCRIBE failed: 403 Forbidden'], 'auth_failed', 'the camera refused this user'],
    [['[rtsp @ 0x5] method SETUP failed: 461 Unsupported transport'], 'no_stream', 'the camera refused the stream (RTSP 461 Unsupported transport)'],
    [['[rtsp @ 0x5] method DESCRIBE failed: 503 Service Unavailable'], 'no_stream', 'the camera reported an error (RTSP 503 Service Unavailable)'],
    [['[tcp @ 0x5] Connection to tcp://10.0.0.9:554?timeout=0 failed: Connection refused', 'rtsp://10.0.0.9:554/x: Connection refused'], 'unreachable', 'connection refused'],
    [['[tcp @ 0x5] Connection to tcp://10.0.0.9:554?timeout=0 failed: No route to host'], 'unreachable', 'no route to host'],
    [['[tcp @ 0x5] Connection to tcp://10.0.0.9:554 failed: Network is unreachable'], 'unreachable', 'network unreachable'],
    [['[tcp @ 0x5] Failed to resolve hostname cam.invalid: Name or service not known', 'rtsp://cam.invalid:554/x: Input/output error'], 'unreachable', 'camera host name not found'],
    [['[tcp @ 0x5] Connection to tcp://10.0.0.9:554 failed: Connection timed out'], 'timeout', 'camera did not answer in time'],
    [['rtsp://h:554/x: Invalid data found when processing input'], 'no_stream', 'not an RTSP stream (wrong port?)'],
    [['[rtsp @ 0x5] Could not find codec parameters for stream 0 (Video: h264, none): unspecified size'], 'decode_error', 'the camera sends video that cannot be decoded'],
    [['Output file #0 does not contain any stream'], 'no_stream', 'the stream has no video'],
  ];
  it.each(cases)('%j -> %s: %s', (lines, code, reason) => {
    expect(explainFfmpeg(lines)).toEqual({ code, reason });
  });

  it('an end without a telling message: the camera closed it; otherwise the last line, trimmed', () => {
    expect(explainFfmpeg([], true)).toEqual({ code: 'no_stream', reason: 'camera closed the connection' });
    expect(explainFfmpeg(['[rtsp @ 0x5] something odd happened'])).toEqual({ code: 'no_stream', reason: 'ffmpeg: something odd happened' });
  });
});

describe('PpmReader', () => {
  const ppm = (w: number, h: number, fill: number) => Buffer.concat([Buffer.from(`P6\n${w} ${h}\n255\n`), Buffer.alloc(w * h * 3, fill)]);

  it('splits a byte stream into images of exactly the right size, whatever the chunking', () => {
    const stream = Buffer.concat([ppm(4, 2, 1), ppm(4, 2, 2), ppm(3, 5, 3)]);
    for (const size of [1, 7, 24, 1000]) {
      const images: RawImage[] = [];
      const reader = new PpmReader((img) => images.push(img));
      for (let i = 0; i < stream.length; i += size) reader.push(stream.subarray(i, i + size));
      expect(images.map((i) => [i.width, i.height, i.data.length, i.data[0]])).toEqual([
        [4, 2, 24, 1],
        [4, 2, 24, 2],
        [3, 5, 45, 3],
      ]);
      expect(reader.pending).toBe(0);
    }
  });

  it('copies every byte into a buffer of its own image, whatever the chunking', () => {
    const payloads = [Buffer.alloc(64 * 48 * 3), Buffer.alloc(64 * 48 * 3), Buffer.alloc(5 * 3 * 3)];
    payloads.forEach((p, k) => p.forEach((_, i) => (p[i] = (i * 31 + k * 7) % 251)));
    const sizes = [[64, 48], [64, 48], [5, 3]] as const;
    const stream = Buffer.concat(payloads.flatMap((p, k) => [Buffer.from(`P6\n${sizes[k]![0]} ${sizes[k]![1]}\n255\n`), p]));
    for (const size of [3, 4096, 9000, 65536, stream.length]) {
      const images: RawImage[] = [];
      const reader = new PpmReader((img) => images.push(img));
      for (let i = 0; i < stream.length; i += size) reader.push(stream.subarray(i, i + size));
      expect(images.map((img) => Buffer.compare(img.data, payloads[images.indexOf(img)]!))).toEqual([0, 0, 0]);
      // Each image owns its memory: nothing of the stream or of the next image rides along.
      expect(images[0]!.data.buffer).not.toBe(images[1]!.data.buffer);
      expect(images[0]!.data.byteLength).toBe(64 * 48 * 3);
    }
  });

  it('can read into buffers it is given: two in turn, never the one still in use', () => {
    const buffers = new PictureBuffers();
    let inUse: Buffer | undefined;
    const images: RawImage[] = [];
    const reader = new PpmReader(
      (img) => images.push((inUse = img.data, img)),
      (w, h) => buffers.next(w * h * 3, inUse),
    );
    for (let k = 0; k < 5; k++) reader.push(ppm(4, 2, k));
    expect(new Set(images.map((i) => i.data)).size).toBe(2);
    expect(images[3]!.data).toBe(images[1]!.data);
    expect(images[4]!.data[0]).toBe(4);
    // A size change makes new buffers.
    reader.push(ppm(2, 2, 9));
    expect(images[5]!.data.length).toBe(12);
    expect(() => new PpmReader(() => {}, () => Buffer.alloc(3)).push(ppm(4, 2, 1))).toThrow(/buffer of 3 bytes/);
  });

  it('accepts header comments and refuses what is not 8-bit P6', () => {
    const images: RawImage[] = [];
    new PpmReader((img) => images.push(img)).push(Buffer.concat([Buffer.from('P6 # made by ffmpeg\n2 1 255\n'), Buffer.alloc(6)]));
    expect(images).toHaveLength(1);
    expect(() => new PpmReader(() => {}).push(Buffer.from('GIF89a....'))).toThrow(/not PPM/);
    expect(() => new PpmReader(() => {}).push(Buffer.from('P6\n2 1\n65535\n'))).toThrow(/maxval/);
  });
});

describe('Backoff', () => {
  it('doubles up to the cap, with jitter between half and all of it', () => {
    const low = new Backoff({ initialMs: 100, maxMs: 1000, random: () => 0 });
    expect(Array.from({ length: 6 }, () => low.next())).toEqual([50, 100, 200, 400, 500, 500]);
    const high = new Backoff({ initialMs: 100, maxMs: 1000, random: () => 0.999999 });
    expect(Array.from({ length: 6 }, () => high.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
    high.reset();
    expect(high.next()).toBe(100);
  });
});

describe('ffmpeg arguments', () => {
  it('RTSP over TCP, the detect rate, never upscaled, rotation before scaling, PPM on stdout', () => {
    expect(videoFilter({ fps: 5, maxWidth: 1280 })).toBe("fps=5,scale='min(iw,1280)':-2");
    expect(videoFilter({ fps: 8, maxWidth: 640, rotate: 90 })).toBe("fps=8,transpose=clock,scale='min(iw,640)':-2");
    const args = decodeArgs('rtsp://h:554/x', { fps: 5, maxWidth: 640 });
    expect(args.join(' ')).toContain('-rtsp_transport tcp');
    expect(args.slice(-6)).toEqual(['-pix_fmt', 'rgb24', '-c:v', 'ppm', '-f', 'image2pipe', 'pipe:1'].slice(-6));
  });

  it('a URL with a password goes in a stream script: one file line, quotes and control characters made harmless', () => {
    expect(hasCredentials('rtsp://u:p@h:554/x')).toBe(true);
    expect(hasCredentials('rtsp://u@h/x')).toBe(true);
    expect(hasCredentials('rtsp://h:554/x?user=a@b')).toBe(false);
    const dir = mkdtempSync(join(tmpdir(), 'footfall-parts-'));
    try {
      // Each ffmpeg at hand: the system's (5 and later: per-input `option` lines) and the npm package's (4.x: none; the
      // transport rides on the URL as the RTSP demuxer's own `?tcp`, and the I/O timeout is spelled -stimeout).
      const bins = [...new Set([resolveFfmpeg().path, npmFfmpeg()].filter((b): b is string => !!b && ffmpegMajor(b) !== undefined))];
      expect(bins.length).toBeGreaterThan(0);
      for (const ffmpegPath of bins) {
        const old = ffmpegMajor(ffmpegPath)! < 5;
        const input = writeStreamScript("rtsp://o'brien:pw@h:554/a b\nfile '/etc/passwd'", dir, '7', { ioTimeoutMs: 2000, ffmpegPath });
        expect(input.script).toBe(join(dir, '7.ffconcat'));
        expect(readFileSync(input.script, 'utf8')).toBe(
          old
            ? "ffconcat version 1.0\nfile 'rtsp://o'\\''brien:pw@h:554/a%20b%0Afile%20'\\''/etc/passwd'\\''?tcp'\n"
            : "ffconcat version 1.0\nfile 'rtsp://o'\\''brien:pw@h:554/a%20b%0Afile%20'\\''/etc/passwd'\\'''\noption rtsp_transport tcp\noption timeout 2000000\n",
        );
        const args = decodeArgs(input, { fps: 5, maxWidth: 640, ffmpegPath });
        expect(args.join(' ')).toContain(`-f concat -safe 0 -protocol_whitelist file,rtsp,rtp,tcp,udp -i ${input.script}`);
        expect(args.join(' ')).not.toContain('rtsp://');
        expect(decodeArgs('rtsp://h/x', { fps: 5, maxWidth: 640, ffmpegPath }).join(' ')).toContain(old ? '-stimeout 30000000 -i rtsp://h/x' : '-timeout 30000000 -i rtsp://h/x');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('LineTail keeps the last lines, redacted', () => {
    const tail = new LineTail(2, (l) => l.toUpperCase());
    tail.push('a\nb\r');
    tail.push('c\nd');
    tail.end();
    expect(tail.lines).toEqual(['C', 'D']);
  });
});
