/**
 * `footfall enrol` against a real head office in-process: what it writes into the configuration besides what head
 * office answers (the local settings an installer chose).
 */
import { chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { enrolmentCode, openShop } from '../../test/support/shop-pc.js';
import { loadAgentConfig, saveAgentConfig } from '../config/config.js';
import { enrolShopPc } from './enrol.js';

let h: Harness;
let owner: string;
let shop: { site_id: string };
let tmp: string;

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-enrol-'));
  h = await startHarness();
  owner = (await h.company('Chai Point')).ownerToken;
  shop = await openShop(h, owner, { name: 'Andheri' });
});

afterAll(async () => {
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const code = () => enrolmentCode(h, owner, shop.site_id);

describe('footfall enrol', () => {
  it('--force keeps the local settings of the configuration it replaces (its queue is in that data folder)', async () => {
    const file = path.join(tmp, 'again', 'agent.json');
    const dataDir = path.join(tmp, 'again', 'srv-footfall');
    await enrolShopPc({ server: h.url, code: await code(), configPath: file, local: { data_dir: dataDir, ffmpeg_path: '/opt/ffmpeg/bin/ffmpeg' } });
    // Settings edited by hand afterwards.
    const first = await loadAgentConfig(file);
    await saveAgentConfig(file, { ...first, detect_fps: 8, queue_max_items: 5000, log_level: 'debug' }, { overwrite: true });

    // Re-installing: enrolled again with a new code, without repeating --data-dir and --ffmpeg.
    await enrolShopPc({ server: h.url, code: await code(), configPath: file, force: true });
    const again = await loadAgentConfig(file);
    expect(again.token).not.toBe(first.token);
    expect(again).toMatchObject({ data_dir: dataDir, ffmpeg_path: '/opt/ffmpeg/bin/ffmpeg', detect_fps: 8, queue_max_items: 5000, log_level: 'debug' });

    // What is given on the command line wins.
    await enrolShopPc({ server: h.url, code: await code(), configPath: file, force: true, local: { detect_fps: 3 } });
    expect(await loadAgentConfig(file)).toMatchObject({ data_dir: dataDir, detect_fps: 3, queue_max_items: 5000 });
  });

  // Needs root: `sudo footfall enrol` (the help's own example) into /etc/footfall, which belongs to the service's user.
  it.skipIf(process.getuid?.() !== 0)('run as root, the configuration belongs to the owner of its folder (the service reads it)', async () => {
    const dir = path.join(tmp, 'etc-footfall');
    mkdirSync(dir, { mode: 0o750 });
    const service = { uid: 65534, gid: 65534 }; // nobody:nogroup stands for footfall:footfall
    chownSync(dir, service.uid, service.gid);
    const file = path.join(dir, 'agent.json');
    await enrolShopPc({ server: h.url, code: await code(), configPath: file });
    expect(statSync(file)).toMatchObject({ uid: service.uid, gid: service.gid });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // Enrolled again (--force): still the service's.
    await enrolShopPc({ server: h.url, code: await code(), configPath: file, force: true });
    expect(statSync(file)).toMatchObject({ uid: service.uid, gid: service.gid });
  });

  it('a relative --data-dir or --ffmpeg is kept as an absolute path (the service runs in another folder)', async () => {
    const file = path.join(tmp, 'relative', 'agent.json');
    await enrolShopPc({ server: h.url, code: await code(), configPath: file, local: { data_dir: 'footfall-data', ffmpeg_path: path.join('bin', 'ffmpeg') } });
    const config = await loadAgentConfig(file);
    expect(config.data_dir).toBe(path.resolve('footfall-data'));
    expect(config.ffmpeg_path).toBe(path.resolve('bin', 'ffmpeg'));

    // A bare program name is looked up on PATH, as before.
    await enrolShopPc({ server: h.url, code: await code(), configPath: file, force: true, local: { ffmpeg_path: 'ffmpeg' } });
    expect((await loadAgentConfig(file)).ffmpeg_path).toBe('ffmpeg');
  });
});
