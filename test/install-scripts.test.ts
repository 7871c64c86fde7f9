import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../server/config.js';
import { noteSkip } from './support/skips.js';

/**
 * packaging/install-agent.sh and install-server.sh, run with their test-only `--root DIR` (packaging/lib.sh): files
 * are staged under a temporary folder and nothing on this machine is changed. Commands that would change it
 * (systemctl, useradd, chown, apt-get, sudo, runuser) are replaced on PATH by stand-ins that only record being called, and
 * every test checks that none was. What needs a real systemd (the service starting, /healthz answering through it,
 * the user being created) is tested in test/systemd.test.ts.
 */

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const packaging = path.join(repo, 'packaging');
const node = fs.realpathSync(process.execPath);
const isRoot = process.getuid?.() === 0;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-install-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

// Stand-ins for the commands --root must never call.
const guardBin = path.join(tmp, 'guard-bin');
const guardLog = path.join(tmp, 'guard.log');
fs.mkdirSync(guardBin);
for (const cmd of ['systemctl', 'useradd', 'chown', 'apt-get', 'sudo', 'runuser']) {
  fs.writeFileSync(path.join(guardBin, cmd), `#!/bin/sh\necho "${cmd} $*" >> '${guardLog}'\nexit 1\n`, { mode: 0o755 });
}
const basePath = `${guardBin}:${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`;

let n = 0;
/** A fresh folder under the test's temporary folder. */
function fresh(name: string): string {
  const dir = path.join(tmp, `${++n}-${name}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** A built application, as far as the scripts look: dist/cli/main.js. */
function app(name = 'app'): string {
  const dir = fresh(name);
  fs.mkdirSync(path.join(dir, 'dist/cli'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'dist/cli/main.js'), '');
  return dir;
}

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function run(script: string, args: string[], env: Record<string, string | undefined> = {}): Run {
  fs.rmSync(guardLog, { force: true });
  const r = spawnSync('bash', [path.join(packaging, script), ...args], {
    encoding: 'utf8',
    env: { ...process.env, PATH: basePath, FOOTFALL_INSTALL_TEST_UID: '0', ...env },
  });
  const guarded = fs.existsSync(guardLog) ? fs.readFileSync(guardLog, 'utf8') : '';
  expect(guarded, 'commands that change the machine were called').toBe('');
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const mode = (p: string) => fs.statSync(p).mode & 0o777;
const read = (p: string) => fs.readFileSync(p, 'utf8');
const unitLines = (p: string) => read(p).split('\n').filter((l) => !l.startsWith('#'));

describe('install-agent.sh --root', () => {
  it('--help prints the usage from the header and exits 0', () => {
    const r = run('install-agent.sh', ['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('sudo packaging/install-agent.sh [--app-dir DIR] [--no-start]');
    expect(r.out).toContain('--root DIR is for the tests only');
    expect(r.out).not.toContain('set -euo');
  });

  it('stages the folders, the command and the unit, and says how to enrol', () => {
    const dir = app();
    const root = fresh('root');
    const r = run('install-agent.sh', ['--root', root, '--app-dir', dir]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(mode(`${root}/etc/footfall`)).toBe(0o750);
    expect(mode(`${root}/var/lib/footfall`)).toBe(0o700);
    expect(mode(`${root}/usr/local/bin/footfall`)).toBe(0o755);
    expect(read(`${root}/usr/local/bin/footfall`)).toBe(`#!/bin/sh\nexec "${node}" "${dir}/dist/cli/main.js" "$@"\n`);
    const unit = `${root}/etc/systemd/system/footfall-agent.service`;
    expect(mode(unit)).toBe(0o644);
    const lines = unitLines(unit);
    expect(lines).toContain(`ExecStart=${node} --optimize-for-size --single-threaded-gc ${dir}/dist/cli/main.js agent --config /etc/footfall/agent.json`);
    expect(lines).toContain(`WorkingDirectory=${dir}`);
    expect(lines).toContain('User=footfall');
    expect(lines.join('\n')).not.toContain('/opt/footfall');
    for (const step of ['creating the system user footfall', 'chown footfall:footfall /etc/footfall', 'installing ffmpeg',
      'fetching the face models', 'systemctl daemon-reload', 'systemctl enable --quiet footfall-agent.service']) {
      expect(r.out).toContain(`install-agent: --root: skipped: ${step}`);
    }
    expect(r.out).toContain('This PC is not enrolled yet');
    expect(r.out).not.toContain('systemctl restart');
  });

  it('an enrolled PC: agent.json is made 0600 and the service restarted, unless --no-start', () => {
    const dir = app();
    const root = fresh('root');
    fs.mkdirSync(`${root}/etc/footfall`, { recursive: true });
    fs.writeFileSync(`${root}/etc/footfall/agent.json`, '{"kept":true}', { mode: 0o644 });
    const r = run('install-agent.sh', ['--root', root, '--app-dir', dir]);
    expect(r.code).toBe(0);
    expect(mode(`${root}/etc/footfall/agent.json`)).toBe(0o600);
    expect(read(`${root}/etc/footfall/agent.json`)).toBe('{"kept":true}');
    expect(r.out).toContain('skipped: chown footfall:footfall /etc/footfall/agent.json');
    expect(r.out).toContain('skipped: systemctl restart footfall-agent.service');
    expect(r.out).not.toContain('not enrolled');
    const again = run('install-agent.sh', ['--root', root, '--app-dir', dir, '--no-start']);
    expect(again.code).toBe(0);
    expect(again.out).not.toContain('systemctl restart');
  });
});

describe('install-server.sh --root', () => {
  const template = read(path.join(packaging, 'server.env'));

  it('--help prints the usage from the header and exits 0', () => {
    const r = run('install-server.sh', ['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('sudo packaging/install-server.sh [--app-dir DIR] [--no-start]');
    expect(r.out).toContain('--root DIR is for the tests only');
  });

  it('server.env lists every FOOTFALL_* setting of server/config.ts, all commented out', () => {
    for (const key of Object.keys(configSchema.shape)) expect(template, key).toMatch(new RegExp(`^#${key}=`, 'm'));
    expect(template).not.toMatch(/^\s*[A-Z_]+\s*=/m);
  });

  it('stages /etc/footfall, server.env, the command and the unit, and says where to sign in', () => {
    const dir = app();
    const root = fresh('root');
    const r = run('install-server.sh', ['--root', root, '--app-dir', dir]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(mode(`${root}/etc/footfall`)).toBe(0o750);
    expect(mode(`${root}/etc/footfall/server.env`)).toBe(0o600);
    expect(read(`${root}/etc/footfall/server.env`)).toBe(template);
    expect(mode(`${root}/usr/local/bin/footfall`)).toBe(0o755);
    expect(read(`${root}/usr/local/bin/footfall`)).toBe(`#!/bin/sh\nexec "${node}" "${dir}/dist/cli/main.js" "$@"\n`);
    // The data folder is systemd's to make (StateDirectory=), as the service's user.
    expect(fs.existsSync(`${root}/var/lib/footfall-server`)).toBe(false);
    const unit = `${root}/etc/systemd/system/footfall-server.service`;
    expect(mode(unit)).toBe(0o644);
    const lines = unitLines(unit);
    expect(lines).toContain(`ExecStart=${node} ${dir}/dist/cli/main.js server`);
    expect(lines).toContain(`WorkingDirectory=${dir}`);
    expect(lines).toContain('EnvironmentFile=-/etc/footfall/server.env');
    expect(lines).toContain('User=footfall');
    expect(lines).toContain('StateDirectory=footfall-server');
    expect(lines.join('\n')).not.toContain('/opt/footfall');
    for (const step of ['creating the system user footfall', 'chown root:footfall /etc/footfall', 'chown root:root /etc/footfall/server.env',
      'systemctl daemon-reload', 'systemctl enable --quiet footfall-server.service', 'systemctl restart footfall-server.service',
      'waiting for http://127.0.0.1:8080/healthz']) {
      expect(r.out).toContain(`install-server: --root: skipped: ${step}`);
    }
    expect(r.out).toMatch(/Web console: http:\/\/\S+:8080\//);
    expect(r.out).toContain("sudo journalctl -u footfall-server -o cat | grep -A1 'Platform admin created'");
    expect(r.out).toContain('encryption.key');
  });

  it('a second run upgrades in place: an edited server.env is kept (mode put back to 0600), the service restarted', () => {
    const dir = app();
    const root = fresh('root');
    expect(run('install-server.sh', ['--root', root, '--app-dir', dir]).code).toBe(0);
    const env = `${root}/etc/footfall/server.env`;
    const edited = `${read(env)}FOOTFALL_HTTP_PORT="9090"\nFOOTFALL_LOG_LEVEL=debug\n`;
    fs.writeFileSync(env, edited);
    fs.chmodSync(env, 0o644);
    fs.mkdirSync(`${root}/var/lib/footfall-server`, { recursive: true });
    fs.writeFileSync(`${root}/var/lib/footfall-server/footfall.db`, '');
    const newer = app('newer');
    const r = run('install-server.sh', ['--root', root, '--app-dir', newer]);
    expect(r.code).toBe(0);
    expect(read(env)).toBe(edited);
    expect(mode(env)).toBe(0o600);
    expect(r.out).toContain('Kept /etc/footfall/server.env');
    expect(unitLines(`${root}/etc/systemd/system/footfall-server.service`)).toContain(`ExecStart=${node} ${newer}/dist/cli/main.js server`);
    expect(r.out).toContain('skipped: systemctl restart footfall-server.service');
    expect(r.out).toContain('skipped: waiting for http://127.0.0.1:9090/healthz');
    expect(r.out).toContain('Upgraded: settings and data kept.');
    expect(r.out).not.toContain('Platform admin created');
  });

  it('an /etc/footfall already there (the agent\'s, on the same machine) is left as it is', () => {
    const root = fresh('root');
    fs.mkdirSync(`${root}/etc/footfall`, { recursive: true, mode: 0o700 });
    fs.chmodSync(`${root}/etc/footfall`, 0o700);
    const r = run('install-server.sh', ['--root', root, '--app-dir', app()]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('Kept /etc/footfall\n');
    expect(mode(`${root}/etc/footfall`)).toBe(0o700);
    expect(mode(`${root}/etc/footfall/server.env`)).toBe(0o600);
  });

  it('--no-start installs without starting and says how to start', () => {
    const r = run('install-server.sh', ['--root', fresh('root'), '--app-dir', app(), '--no-start']);
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('systemctl restart');
    expect(r.out).toContain('Not started (--no-start)');
    expect(r.out).toContain('sudo systemctl start footfall-server');
  });

  it('a first admin chosen in server.env: the sign-in hint names it instead of the log', () => {
    const root = fresh('root');
    fs.mkdirSync(`${root}/etc/footfall`, { recursive: true });
    fs.writeFileSync(`${root}/etc/footfall/server.env`, `FOOTFALL_ADMIN_EMAIL=ops@chain.example\nFOOTFALL_ADMIN_PASSWORD='a long password'\nFOOTFALL_HTTP_HOST=10.0.0.5\n`);
    const r = run('install-server.sh', ['--root', root, '--app-dir', app()]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('Sign in as ops@chain.example with the FOOTFALL_ADMIN_PASSWORD of /etc/footfall/server.env');
    expect(r.out).not.toContain('journalctl -u footfall-server -o cat');
    expect(r.out).toContain('skipped: waiting for http://10.0.0.5:8080/healthz');
    expect(r.out).toContain('Web console: http://10.0.0.5:8080/');
  });
});

describe('ff_wait_http (packaging/lib.sh), the wait for /healthz', () => {
  /** Runs ff_wait_http against a local server that answers 503 `unhealthy` times, then 200. */
  async function wait(unhealthy: number, seconds: number): Promise<{ code: number; requests: number }> {
    let requests = 0;
    const server = http.createServer((_req, res) => {
      requests += 1;
      res.writeHead(requests > unhealthy ? 200 : 503).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const script = `ff_name=test; . '${packaging}/lib.sh'; ff_node='${node}'; ff_wait_http http://127.0.0.1:${port}/healthz ${seconds}`;
      const code = await new Promise<number>((resolve) => {
        execFile('bash', ['-c', script], (err) => resolve(err ? Number((err as { code?: number }).code ?? 1) : 0));
      });
      return { code, requests };
    } finally {
      server.close();
    }
  }

  it('returns once the route answers 200', async () => {
    const r = await wait(2, 20);
    expect(r.code).toBe(0);
    expect(r.requests).toBe(3);
  });

  it('fails when it never does within the time given', async () => {
    const r = await wait(Infinity, 1);
    expect(r.code).toBe(1);
    expect(r.requests).toBeGreaterThanOrEqual(2);
  });
});

describe.each(['install-agent.sh', 'install-server.sh'])('%s refuses', (script) => {
  const name = script.replace(/\.sh$/, '');
  const unitName = script === 'install-agent.sh' ? 'footfall-agent.service' : 'footfall-server.service';

  it('an unknown option (exit 2)', () => {
    const r = run(script, ['--frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${name}: unknown option --frobnicate`);
  });

  it('to run as another user than root (FOOTFALL_INSTALL_TEST_UID stands for id -u with --root)', () => {
    const root = fresh('root');
    const r = run(script, ['--root', root, '--app-dir', app()], { FOOTFALL_INSTALL_TEST_UID: '1000' });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^${name}: run it as root`));
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('to run as another user than root, for real', () => {
    if (!isRoot) {
      const r = run(script, ['--app-dir', app()], { FOOTFALL_INSTALL_TEST_UID: undefined });
      expect(r.code).toBe(1);
      expect(r.err).toContain('run it as root');
      return;
    }
    // This test runs as root (CI does): run the scripts as nobody, from a copy any user can read (the checkout may
    // sit in a folder nobody cannot enter).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-install-nobody-'));
    try {
      fs.chmodSync(dir, 0o755);
      // The scripts and what they install beside them (not packaging/scale-out/, a folder of its own).
      for (const f of fs.readdirSync(packaging, { withFileTypes: true })) if (f.isFile()) fs.copyFileSync(path.join(packaging, f.name), path.join(dir, f.name));
      fs.rmSync(guardLog, { force: true });
      const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', path.join(dir, script)], {
        encoding: 'utf8',
        env: { PATH: basePath },
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`${name}: run it as root`);
      expect(fs.existsSync(guardLog) ? fs.readFileSync(guardLog, 'utf8') : '').toBe('');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an application that is not built', () => {
    const root = fresh('root');
    const r = run(script, ['--root', root, '--app-dir', fresh('unbuilt')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/dist\/cli\/main\.js is missing: build the application first/);
    expect(fs.existsSync(`${root}/etc/systemd/system/${unitName}`)).toBe(false);
  });

  it.each(['with space', 'percent%d', 'hash#x'])('an application folder whose path has a special character (%s)', (odd) => {
    const dir = path.join(app(), odd);
    fs.mkdirSync(path.join(dir, 'dist/cli'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'dist/cli/main.js'), '');
    const root = fresh('root');
    const r = run(script, ['--root', root, '--app-dir', dir]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('paths with spaces or characters other than');
    expect(fs.existsSync(`${root}/etc/systemd/system/${unitName}`)).toBe(false);
  });

  it('a node older than 20.19', () => {
    const bin = fresh('old-node');
    fs.writeFileSync(path.join(bin, 'node'), '#!/bin/sh\n[ "$1" = --version ] && echo v20.18.0 && exit 0\nexit 1\n', { mode: 0o755 });
    const r = run(script, ['--root', fresh('root'), '--app-dir', app()], { PATH: `${bin}:${basePath}` });
    expect(r.code).toBe(1);
    expect(r.err).toContain('node v20.18.0 is too old: Node.js 20.19 or later is needed');
  });

  it('--root / (that is a real installation)', () => {
    const r = run(script, ['--root', '/', '--app-dir', app()]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('--root / is not a staging folder');
  });

  it('a missing --app-dir folder', () => {
    const r = run(script, ['--root', fresh('root'), '--app-dir', path.join(tmp, 'nowhere')]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('no such folder');
  });
});

describe('packaging scripts and units', () => {
  const scripts = fs.readdirSync(packaging).filter((f) => f.endsWith('.sh')).map((f) => path.join(packaging, f));
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

  it('bash -n passes on every script', () => {
    expect(scripts.length).toBeGreaterThanOrEqual(2);
    for (const s of scripts) {
      const r = spawnSync('bash', ['-n', s], { encoding: 'utf8' });
      expect(r.stderr, s).toBe('');
      expect(r.status, s).toBe(0);
    }
  });

  it('the install scripts are executable', () => {
    for (const s of scripts.filter((f) => path.basename(f).startsWith('install-'))) expect(mode(s) & 0o111, s).toBe(0o111);
  });

  if (!has('shellcheck')) noteSkip('test/install-scripts.test.ts', 'no shellcheck (apt-get install shellcheck)');
  it.skipIf(!has('shellcheck'))('shellcheck passes on every script', () => {
    const r = spawnSync('shellcheck', ['-x', ...scripts], { encoding: 'utf8', cwd: packaging });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  if (!has('systemd-analyze')) noteSkip('test/install-scripts.test.ts', 'no systemd-analyze (apt-get install systemd): unit files not verified');
  it.skipIf(!has('systemd-analyze'))('systemd-analyze verify accepts the installed units', () => {
    const root = fresh('root');
    const dir = app();
    expect(run('install-agent.sh', ['--root', root, '--app-dir', dir]).code).toBe(0);
    expect(run('install-server.sh', ['--root', root, '--app-dir', dir]).code).toBe(0);
    const units = [`${root}/etc/systemd/system/footfall-agent.service`, `${root}/etc/systemd/system/footfall-server.service`];
    for (const unit of units) {
      const r = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      // It only warns about unknown keys or bad values: any line about our unit is a failure.
      const ours = (r.stdout + r.stderr).split('\n').filter((l) => l.includes(path.basename(unit)));
      expect(ours, unit).toEqual([]);
      expect(r.status, `${unit}: ${r.stderr}`).toBe(0);
    }
  });
});
