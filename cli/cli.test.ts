import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { runFootfall } from '../test/support/command-output.js';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';

/**
 * The built CLI (`node dist/cli/main.js`), as an operator runs it. `npm test` builds first; a run without dist/
 * builds it once here.
 */
const root = packageRoot();
const main = path.join(root, 'dist/cli/main.js');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The parent's environment without any FOOTFALL_ variable, plus these. */
function envWith(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FOOTFALL_')) env[k] = v;
  return { ...env, ...vars };
}

const run = (args: string[], vars: Record<string, string> = {}): Promise<Run> => runFootfall(args, envWith(vars));

interface Started {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `footfall server` and waits for its 'head office ready' log line (JSON, carrying the URL). */
function startServerProcess(vars: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [main, 'server'], { cwd: root, env: envWith(vars), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no 'head office ready' line in 20 s\nstdout: ${out}\nstderr: ${err}`));
    }, 20_000);
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'head office ready' && entry.url) {
          clearTimeout(timer);
          resolve({ child, url: entry.url, stdout: () => out, stderr: () => err, exit });
          return;
        }
      }
    });
    void exit.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before it was ready\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

const serverVars = (dataDir: string): Record<string, string> => ({
  FOOTFALL_DATA_DIR: dataDir,
  FOOTFALL_HTTP_HOST: '127.0.0.1',
  FOOTFALL_HTTP_PORT: '0',
  FOOTFALL_MQTT_HOST: '127.0.0.1',
  FOOTFALL_MQTT_PORT: '0',
});

async function login(url: string, email: string, password: string) {
  const res = await fetch(`${url}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }) });
  return res.status;
}

describe('footfall CLI', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-cli-'));
    dirs.push(d);
    return d;
  };

  beforeAll(() => {
    if (!fs.existsSync(main)) execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  }, 120_000);
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it("README's Commands list names every command and subcommand the CLI has", async () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const block = /## Commands\n+```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const namesIn = (help: string) =>
      [...(help.split(/^Commands:$/m)[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!).filter((n) => n !== 'help');
    const top = namesIn((await run(['--help'])).stdout);
    expect(top.length).toBeGreaterThanOrEqual(10);
    const missing: string[] = [];
    const helps = await Promise.all(top.map((name) => run([name, '--help']))); // each is a node start: side by side
    for (const [i, name] of top.entries()) {
      if (!block.includes(`footfall ${name}`)) missing.push(name);
      for (const sub of namesIn(helps[i]!.stdout)) {
        if (!block.includes(`footfall ${name} ${sub}`) && !block.includes(`footfall ${name} ${sub}|`) && !new RegExp(`footfall ${name} [a-z|]*\\b${sub}\\b`).test(block)) missing.push(`${name} ${sub}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('--help everywhere', async () => {
    const [top, admin, create, server] = await Promise.all([run(['--help']), run(['admin', '--help']), run(['admin', 'create', '--help']), run(['server', '--help'])]);
    for (const r of [top, admin, create, server]) expect(r.code).toBe(0);
    expect(top.stdout).toMatch(/Usage: footfall/);
    expect(top.stdout).toMatch(/\bserver\b/);
    expect(top.stdout).toMatch(/\badmin\b/);
    expect(admin.stdout).toMatch(/\bcreate\b/);
    expect(create.stdout).toContain('--email <email>');
    expect(create.stdout).toContain('--password <password>');
    expect(server.stdout).toMatch(/Usage: footfall server/);
  });

  // One data folder for the three admin tests below, each with its own time budget: the first makes the admin,
  // the second refuses what it should, the third signs both admins in on a started server.
  const adminData = { dir: '', password: '' };

  it('admin create: a generated password printed once; a duplicate is refused with exit 1', async () => {
    const dataDir = tempDir();
    adminData.dir = dataDir;
    const made = await run(['admin', 'create', '--email', 'Ops@Example.test'], { FOOTFALL_DATA_DIR: dataDir });
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    expect(made.stdout).toContain(`Platform admin created: ops@example.test (database ${path.join(dataDir, 'footfall.db')})`);
    const password = /Password \(shown once, not stored anywhere\): (\S+)/.exec(made.stdout)?.[1];
    expect(password).toMatch(/^[a-z2-9]{5}(-[a-z2-9]{5}){3}$/);
    expect(made.stdout.split(password!).length - 1).toBe(1);

    const dup = await run(['admin', 'create', '--email', 'ops@example.test'], { FOOTFALL_DATA_DIR: dataDir });
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/ops@example\.test already has an account/);
    expect(dup.stdout).not.toMatch(/Password/);
    adminData.password = password!;
  });

  it('admin create: a chosen password is not printed; a short password, a bad email and a missing email exit 1', async () => {
    const dataDir = adminData.dir;
    expect(dataDir, 'the admin test above made the data folder').not.toBe('');
    const [chosen, short, badEmail, noEmail] = await Promise.all([
      run(['admin', 'create', '--email', 'second@example.test', '--password', 'chosen-password'], { FOOTFALL_DATA_DIR: dataDir }),
      run(['admin', 'create', '--email', 'third@example.test', '--password', 'short'], { FOOTFALL_DATA_DIR: dataDir }),
      run(['admin', 'create', '--email', 'not-an-email'], { FOOTFALL_DATA_DIR: dataDir }),
      run(['admin', 'create'], { FOOTFALL_DATA_DIR: dataDir }),
    ]);
    expect(chosen.code).toBe(0);
    expect(chosen.stdout).toContain('Platform admin created: second@example.test');
    expect(chosen.stdout).not.toMatch(/Password/);
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/at least 8 characters/);
    expect(badEmail.code).toBe(1);
    expect(badEmail.stderr).toMatch(/not an email address/);
    expect(noEmail.code).toBe(1);
    expect(noEmail.stderr).toMatch(/--email/);
  });

  it('admin create: both admins sign in on a server started on the same data folder; no other admin is made', async () => {
    const { dir: dataDir, password } = adminData;
    expect(password, 'the admin tests above made the admins').not.toBe('');
    const s = await startServerProcess(serverVars(dataDir));
    try {
      expect(await login(s.url, 'ops@example.test', password)).toBe(200);
      expect(await login(s.url, 'second@example.test', 'chosen-password')).toBe(200);
      expect(s.stdout()).not.toMatch(/Platform admin created/);
    } finally {
      s.child.kill('SIGTERM');
      await s.exit;
    }
  });

  it('server: first start prints a generated admin password once, serves on the logged URL, exits 0 on SIGTERM', async () => {
    const dataDir = tempDir();
    const s = await startServerProcess(serverVars(dataDir));
    let stopped = false;
    try {
      expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(s.url).not.toMatch(/:0$/);
      const health = await fetch(`${s.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok', database: 'ok', broker: 'ok' });
      expect(health.headers.get('x-request-id')).toBeTruthy();

      const password = /Password \(shown once, not stored anywhere\): (\S+)/.exec(s.stdout())?.[1];
      expect(s.stdout()).toContain('Platform admin created: admin@footfall.local');
      expect(s.stdout()).toContain(`Web console: ${s.url}/ (sign in there`);
      expect(await login(s.url, 'admin@footfall.local', password!)).toBe(200);
      expect(fs.statSync(path.join(dataDir, 'encryption.key')).mode & 0o777).toBe(0o600);
      expect(fs.existsSync(path.join(dataDir, 'footfall.db'))).toBe(true);

      s.child.kill('SIGTERM');
      stopped = true;
      expect(await s.exit).toEqual({ code: 0, signal: null });
      expect(s.stdout()).toMatch(/"msg":"shutting down"/);
    } finally {
      if (!stopped) s.child.kill('SIGKILL');
    }

    // Second start on the same folder: the admin exists, nothing is printed.
    const again = await startServerProcess({ ...serverVars(dataDir), FOOTFALL_ADMIN_EMAIL: 'other@footfall.local', FOOTFALL_ADMIN_PASSWORD: 'other-password' });
    try {
      expect(again.stdout()).not.toMatch(/Password/);
      expect(again.stdout()).not.toContain('Web console:');
      expect(await login(again.url, 'other@footfall.local', 'other-password')).toBe(401);
    } finally {
      again.child.kill('SIGINT');
      expect((await again.exit).code).toBe(0);
    }
  });

  it('server: FOOTFALL_ADMIN_PASSWORD makes the admin without printing it', async () => {
    const dataDir = tempDir();
    const s = await startServerProcess({ ...serverVars(dataDir), FOOTFALL_ADMIN_EMAIL: 'Boss@Example.test', FOOTFALL_ADMIN_PASSWORD: 'boss-password' });
    try {
      expect(s.stdout()).not.toContain('boss-password');
      expect(s.stdout()).not.toMatch(/Password \(shown once/);
      expect(await login(s.url, 'boss@example.test', 'boss-password')).toBe(200);
    } finally {
      s.child.kill('SIGTERM');
      expect((await s.exit).code).toBe(0);
    }
  });

  it('a bad config value exits 1 with a message naming the variable', async () => {
    const dataDir = tempDir();
    const [port, level, admin] = await Promise.all([
      run(['server'], { ...serverVars(dataDir), FOOTFALL_HTTP_PORT: 'abc' }),
      run(['server'], { ...serverVars(dataDir), FOOTFALL_LOG_LEVEL: 'chatty' }),
      run(['admin', 'create', '--email', 'x@example.test'], { FOOTFALL_DATA_DIR: dataDir, FOOTFALL_ACCESS_TOKEN_TTL_S: '99999' }),
    ]);
    expect(port.code).toBe(1);
    expect(port.stderr).toMatch(/FOOTFALL_HTTP_PORT: .*\(got "abc"\)/);
    expect(port.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(level.code).toBe(1);
    expect(level.stderr).toMatch(/FOOTFALL_LOG_LEVEL/);
    expect(admin.code).toBe(1);
    expect(admin.stderr).toMatch(/FOOTFALL_ACCESS_TOKEN_TTL_S/);
    expect(fs.readdirSync(dataDir)).toEqual([]); // nothing was created
  });

  it('a port in use exits 1 with one line saying why', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    try {
      const port = String((blocker.address() as net.AddressInfo).port);
      const r = await run(['server'], { ...serverVars(tempDir()), FOOTFALL_HTTP_PORT: port });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`Head office could not start: .*EADDRINUSE.*${port}`));
      expect(r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
  });
});
