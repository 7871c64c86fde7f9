/**
 * A real Mosquitto 2 for tests of the external-broker option (FOOTFALL_MQTT_URL): `mosquitto -c <generated conf>` on
 * a free 127.0.0.1 port with the dynamic-security plugin and a dynamic-security.json made by
 * `mosquitto_ctrl dynsec init` (one admin login, head office's). Debian's `mosquitto` package has all three.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { onPath } from '../../agent/capture/ffmpeg-bin.js'; // PATH only: scripts/bare-path.sh hides tools that way
import { closedPort } from './ports.js';

const PLUGIN_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib/arm-linux-gnueabihf', '/usr/lib', '/usr/local/lib', '/usr/lib64'];
const PLUGIN = 'mosquitto_dynamic_security.so';


const pluginPath = (): string | undefined => PLUGIN_DIRS.map((d) => path.join(d, PLUGIN)).find((p) => fs.existsSync(p));

/** Why the Mosquitto tests cannot run here, or undefined when they can. */
export function mosquittoMissing(): string | undefined {
  if (!onPath('mosquitto')) return 'no mosquitto on PATH (apt-get install mosquitto; it is in /usr/sbin)';
  if (!onPath('mosquitto_ctrl')) return 'no mosquitto_ctrl (apt-get install mosquitto: Mosquitto 2 or later)';
  if (!pluginPath()) return `no ${PLUGIN} (apt-get install mosquitto: Mosquitto 2 or later)`;
  return undefined;
}

export interface TestMosquitto {
  port: number;
  /** mqtt://127.0.0.1:<port> */
  url: string;
  admin: { username: string; password: string };
  dir: string;
  /** Stops the broker (SIGTERM: it saves its persistence file) and starts it again on the same port and folder. */
  restart(): Promise<void>;
  /** Stops the broker (SIGTERM, then SIGKILL) and removes its folder. */
  close(): Promise<void>;
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`mosquitto exited (${child.exitCode}): ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`mosquitto did not listen on ${port} within 10 s: ${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startMosquitto(): Promise<TestMosquitto> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-mosquitto-'));
  const admin = { username: 'footfall', password: 'head-office-broker-password-1' };
  const dynsec = path.join(dir, 'dynamic-security.json');
  execFileSync(onPath('mosquitto_ctrl')!, ['dynsec', 'init', dynsec, admin.username, admin.password], { stdio: 'ignore' });
  const port = await closedPort();
  const conf = path.join(dir, 'mosquitto.conf');
  fs.writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous false',
      // Run as root (a CI container), mosquitto would switch to the user "mosquitto", who cannot read this folder.
      ...(process.getuid?.() === 0 ? ['user root'] : []),
      `plugin ${pluginPath()!}`,
      `plugin_opt_config_file ${dynsec}`,
      'persistence true',
      `persistence_location ${dir}/`,
      // Head office's ingest session holds what the shops send while head office is away (docs/operations.md).
      'max_queued_messages 100000',
      '',
    ].join('\n'),
  );
  let output = '';
  let child: ChildProcess;
  const run = async () => {
    child = spawn(onPath('mosquitto')!, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await waitForPort(port, child, () => output);
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await run();
  } catch (err) {
    child!.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    admin,
    dir,
    async restart() {
      await stop();
      await run();
    },
    async close() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs dynamic-security commands as the admin (what an operator would do with mosquitto_ctrl); returns the responses. */
export async function dynsecAsAdmin(mq: TestMosquitto, commands: object[]): Promise<{ command: string; error?: string; data?: unknown }[]> {
  const { connectAsync } = await import('mqtt');
  const admin = await connectAsync(mq.url, { username: mq.admin.username, password: mq.admin.password, protocolVersion: 5, clientId: `test-admin-${process.pid}-${Date.now()}` });
  try {
    await admin.subscribeAsync('$CONTROL/dynamic-security/v1/response');
    const answer = new Promise<Buffer>((resolve) => admin.once('message', (_t, p) => resolve(p)));
    await admin.publishAsync('$CONTROL/dynamic-security/v1', JSON.stringify({ commands }));
    return (JSON.parse((await answer).toString()) as { responses: { command: string; error?: string; data?: unknown }[] }).responses;
  } finally {
    await admin.endAsync();
  }
}
