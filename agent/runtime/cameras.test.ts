/**
 * The camera list kept on disk (`<data dir>/cameras.json`): read at start with the real capture manager; head office
 * is out of reach (a closed port).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CaptureManager } from '../capture/manager.js';
import { CameraSync } from './cameras.js';
import { AgentApi } from './http.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'footfall-cameras-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('kept camera list', () => {
  it('a damaged file is reported without its contents (it holds camera passwords)', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(s) });
    const cacheFile = path.join(dir, 'cameras.json');
    await writeFile(cacheFile, '{"cameras":[{"camera_id":"entrance","username":"admin","password":hunter2-SECRET}]}', { mode: 0o600 });
    const capture = new CaptureManager({ log });
    const sync = new CameraSync({ api: new AgentApi({ serverUrl: 'http://127.0.0.1:9', token: 'ffs_x' }), capture, log, cacheFile });
    expect(await sync.loadCache()).toBe(false);
    sync.stop();
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain('hunter2');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ level: 40, file: cacheFile });
  });
});
