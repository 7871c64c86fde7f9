/**
 * `footfall agent` as the service manager runs it: the built CLI in its own process, stopped with a signal. These
 * cases stop it during start-up, while it still waits for head office (systemctl stop, a console's Ctrl+C).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';
import { startHarness, type Harness } from '../test/support/harness.js';
import { closedPort, silentServer } from '../test/support/ports.js';
import { enrolmentCode, openShop, waitFor } from '../test/support/shop-pc.js';
import { loadAgentConfig, queueFile, saveAgentConfig, type AgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { DurableQueue } from '../agent/queue/queue.js';

const root = packageRoot();
const cli = path.join(root, 'dist/cli/main.js');

/** Builds dist/ when a source the agent command runs is newer than its JavaScript (npm test builds first anyway). */
function ensureBuilt(): void {
  const sources = [path.join(root, 'cli/main.ts'), path.join(root, 'cli/agent.ts')];
  for (const dir of ['agent/runtime', 'agent/queue', 'agent/config', 'agent/enrol']) {
    for (const name of readdirSync(path.join(root, dir))) if (name.endsWith('.ts') && !name.endsWith('.test.ts')) sources.push(path.join(root, dir, name));
  }
  const stale = sources.some((src) => {
    const out = path.join(root, 'dist', path.relative(root, src)).replace(/\.ts$/, '.js');
    return !existsSync(out) || statSync(src).mtimeMs > statSync(out).mtimeMs;
  });
  if (!stale) return;
  try {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'ignore' });
  } catch {
    // type errors elsewhere still emit JavaScript; the runs below show whether the agent works
  }
}


interface AgentProcess {
  kill(signal: NodeJS.Signals): void;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
}

function startAgent(configFile: string): AgentProcess {
  const child = spawn(process.execPath, [cli, 'agent', '--config', configFile, '--no-recognition'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { kill: (signal) => child.kill(signal), exit, stdout: () => out, stderr: () => err };
}

const messages = (out: string): string[] =>
  out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);

let h: Harness;
let tmp: string;
let enrolled: AgentConfig;

beforeAll(async () => {
  ensureBuilt();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-cli-agent-'));
  h = await startHarness();
  const owner = (await h.company('Chai Point')).ownerToken;
  const shop = await openShop(h, owner, { name: 'Andheri' });
  const file = path.join(tmp, 'enrolled.json');
  await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file });
  enrolled = await loadAgentConfig(file);
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('footfall agent stopped during start-up', () => {
  it('SIGTERM while it waits for head office: exit 0 at once, the data folder free for the next agent (SIGINT alike)', async () => {
    const headOffice = await silentServer();
    try {
      const configFile = path.join(tmp, 'agent.json');
      const config = await saveAgentConfig(configFile, {
        ...enrolled,
        server_url: headOffice.url,
        broker: { ...enrolled.broker, host: '127.0.0.1', port: await closedPort() },
        data_dir: path.join(tmp, 'data'),
      });

      const first = startAgent(configFile);
      // Start-up asks head office for its timing (GET /api/agent/me): no answer comes.
      await waitFor(() => headOffice.connections() >= 1, 15_000, 20);
      // The data folder is this agent's already: a second one would be refused now.
      expect(() => new DurableQueue({ file: queueFile(config) })).toThrow(/in use by another footfall agent/);
      const sent = Date.now();
      first.kill('SIGTERM');
      expect({ ...(await first.exit), stderr: first.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
      expect(Date.now() - sent).toBeLessThan(3000); // not after head office's 5 s
      expect(messages(first.stdout())).toContain('agent stopped');

      // The next agent starts on the same data folder (and is stopped the console's way, Ctrl+C, at the same point).
      const second = startAgent(configFile);
      await waitFor(() => headOffice.connections() >= 2, 15_000, 20);
      second.kill('SIGINT');
      expect({ ...(await second.exit), stderr: second.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
      expect(second.stdout()).not.toContain('in use by another footfall agent');

      const queue = new DurableQueue({ file: queueFile(config) });
      expect(queue.stats().queued).toBe(0);
      queue.close();
    } finally {
      await headOffice.close();
    }
  });
});
