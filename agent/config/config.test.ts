import { readdirSync, statSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EnrolResponse } from '../../shared/agent-api.js';
import {
  AgentConfigError,
  DEFAULT_TIMING,
  agentConfigExists,
  brokerHost,
  configFromEnrolment,
  loadAgentConfig,
  permissionWarning,
  queueFile,
  saveAgentConfig,
} from './config.js';
import { ownerForNewFile } from './private-file.js';

const enrol: EnrolResponse = {
  token: 'ffs_SECRET-TOKEN-123',
  site: { id: '5f0c7a3e-8d7e-4c1b-9f3a-2b1c0d9e8f7a', slug: 'andheri', name: 'Andheri West', timezone: 'Asia/Kolkata' },
  company: { slug: 'chai-point', name: 'Chai Point' },
  broker: {
    host: null,
    port: 1883,
    username: 'chai-point.andheri',
    password: 'BROKER-SECRET-456',
    client_id: 'chai-point.andheri',
    topic_prefix: 'ff/chai-point/andheri/',
  },
  timing: { ...DEFAULT_TIMING, heartbeat_interval_s: 15 },
  images: 'off',
};

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'footfall-config-'));
  file = path.join(dir, 'etc', 'footfall', 'agent.json');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('agent config', () => {
  it('is made from an enrolment answer, with local defaults', () => {
    const config = configFromEnrolment('http://head-office:8080/', enrol, { data_dir: '/srv/footfall' }, new Date('2026-05-01T10:00:00Z'));
    expect(config).toMatchObject({
      server_url: 'http://head-office:8080',
      token: enrol.token,
      site: enrol.site,
      broker: enrol.broker,
      timing: { heartbeat_interval_s: 15 },
      enrolled_at: '2026-05-01T10:00:00.000Z',
      data_dir: '/srv/footfall',
      detect_fps: 5,
      queue_max_items: 100_000,
      ffmpeg_path: 'ffmpeg',
    });
    expect(brokerHost(config)).toBe('head-office');
    expect(brokerHost({ ...config, broker: { ...config.broker, host: 'mqtt.example' } })).toBe('mqtt.example');
    expect(queueFile(config)).toBe(path.join('/srv/footfall', 'queue.sqlite'));
  });

  it('is saved with mode 0600, atomically, and loads back the same', async () => {
    const config = configFromEnrolment('http://head-office:8080', enrol);
    expect(await agentConfigExists(file)).toBe(false);
    await saveAgentConfig(file, config);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(path.dirname(file))).toEqual(['agent.json']); // no temporary file left
    expect(await loadAgentConfig(file)).toEqual(config);
    expect(await permissionWarning(file)).toBeUndefined();
    expect(await agentConfigExists(file)).toBe(true);
  });

  it('will not replace an existing file unless told to', async () => {
    const config = configFromEnrolment('http://head-office:8080', enrol);
    await saveAgentConfig(file, config);
    await expect(saveAgentConfig(file, { ...config, detect_fps: 8 })).rejects.toThrow(/already exists.*--force/);
    await saveAgentConfig(file, { ...config, detect_fps: 8 }, { overwrite: true });
    expect((await loadAgentConfig(file)).detect_fps).toBe(8);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('fills in what an older file lacks', async () => {
    const { timing: _t, images: _i, ...minimal } = configFromEnrolment('http://h:8080', enrol);
    const { data_dir: _d, detect_fps: _f, queue_max_items: _q, ffmpeg_path: _p, log_level: _l, ...older } = minimal;
    await saveAgentConfig(file, older);
    const loaded = await loadAgentConfig(file);
    expect(loaded).toMatchObject({ timing: DEFAULT_TIMING, images: 'off', detect_fps: 5, queue_max_items: 100_000, log_level: 'info' });
  });

  it('explains what is wrong without repeating a secret', async () => {
    await expect(loadAgentConfig(file)).rejects.toThrow(/No agent configuration at .*footfall enrol/);
    await saveAgentConfig(file, configFromEnrolment('http://h:8080', enrol));

    const json = JSON.parse(await readFile(file, 'utf8'));
    await writeFile(file, JSON.stringify({ ...json, server_url: 'ftp://h', broker: { ...json.broker, port: 'BROKER-SECRET-456' } }));
    const err = await loadAgentConfig(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AgentConfigError);
    expect((err as Error).message).toMatch(/server_url: must be an http/);
    expect((err as Error).message).toMatch(/broker\.port:/);
    expect((err as Error).message).not.toContain('SECRET');

    await writeFile(file, '{"token": "ffs_SECRET-TOKEN-123", ');
    await expect(loadAgentConfig(file)).rejects.toThrow(/not valid JSON/);
    await expect(loadAgentConfig(file)).rejects.not.toThrow(/SECRET/);
  });

  it('warns when others can read it', async () => {
    await saveAgentConfig(file, configFromEnrolment('http://h:8080', enrol));
    await chmod(file, 0o644);
    expect(await permissionWarning(file)).toMatch(/can be read by other users \(mode 644\).*chmod 600/);
  });
});

describe('files written as root', () => {
  it("belong to the folder's owner only when root writes into another user's folder (sudo footfall ... into the service's)", () => {
    const service = { uid: 998, gid: 997 }; // footfall:footfall, owner of /etc/footfall and /var/lib/footfall
    expect(ownerForNewFile(0, service)).toEqual(service);
    expect(ownerForNewFile(0, { uid: 0, gid: 0 })).toBeUndefined(); // root's own folder: root's file
    expect(ownerForNewFile(0, { uid: 0, gid: 997 })).toBeUndefined();
    expect(ownerForNewFile(998, service)).toBeUndefined(); // the service itself: its files are its own anyway
    expect(ownerForNewFile(1000, service)).toBeUndefined(); // another user: may not give files away
    expect(ownerForNewFile(undefined, service)).toBeUndefined(); // Windows: no user ids
    expect(ownerForNewFile(0, undefined)).toBeUndefined(); // no folder to go by
  });
});
