import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteSkip } from './support/skips.js';

/**
 * The install scripts under a real systemd: a minimal Debian (debootstrap, the codename of this machine, the
 * mirror debootstrap knows) booted with systemd-nspawn, this checkout bound read-only at /opt/footfall and this
 * machine's node and npm bound read-only. In it, as an installer would: install head office, start it, install the
 * agent (which installs ffmpeg and fetches the models), enrol the shop PC with an installation code from the API,
 * start it, see the shop online, restart head office, stop both cleanly. The container shares this machine's
 * network (the models come from the npm registry, ffmpeg from Debian), so head office gets free ports of this
 * machine through server.env, as docs/operations.md says to choose them.
 *
 * Needs root, systemd-nspawn (systemd-container) and debootstrap, which `.ci/run` installs; elsewhere the file skips
 * with a printed reason. test/install-scripts.test.ts checks the scripts' files line by line without a systemd.
 */

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const codename = /^VERSION_CODENAME=(\w+)$/m.exec(fs.existsSync('/etc/os-release') ? fs.readFileSync('/etc/os-release', 'utf8') : '')?.[1];
const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const npmCli = fs.existsSync('/usr/lib/node_modules/npm/bin/npm-cli.js') ? '/usr/lib/node_modules/npm' : undefined;

const skipReason =
  process.platform !== 'linux' ? 'not Linux'
  : process.getuid?.() !== 0 ? 'not root (systemd-nspawn and debootstrap need root)'
  : !has('systemd-nspawn') ? 'no systemd-nspawn (apt-get install systemd-container)'
  : !has('debootstrap') ? 'no debootstrap (apt-get install debootstrap)'
  : !codename ? 'no VERSION_CODENAME in /etc/os-release'
  : !npmCli ? 'npm is not in /usr/lib/node_modules/npm'
  : !fs.existsSync(path.join(repo, 'dist/cli/main.js')) ? 'the application is not built (npm run build)'
  : undefined;
if (skipReason) noteSkip('test/systemd.test.ts', skipReason);

interface Out {
  code: number | null;
  out: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '0.0.0.0', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Runs a command to its end; its output (stdout and stderr together) and exit code. */
function exec(cmd: string, args: string[], timeoutMs: number, env?: NodeJS.ProcessEnv): Promise<Out> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe.skipIf(skipReason !== undefined)('install scripts under a real systemd (systemd-nspawn)', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-systemd-'));
  const rootfs = path.join(work, 'rootfs');
  let container: ChildProcess | undefined;
  let initPid = 0;
  let httpPort = 0;
  let mqttPort = 0;
  let base = '';
  const adminEmail = 'installer@systemd.example';

  /**
   * A command in the booted container (all its namespaces), as root, through bash, with the environment of a root
   * shell there: nothing of this process's (vitest runs under npm, whose npm_config_* settings would follow).
   */
  const containerEnv = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C.UTF-8' };
  const sh = (script: string, timeoutMs = 120_000): Promise<Out> =>
    exec('nsenter', ['-t', String(initPid), '-a', '/bin/bash', '-c', script], timeoutMs, containerEnv);

  async function api(method: string, url: string, token?: string, body?: unknown): Promise<any> {
    const res = await fetch(base + url, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  beforeAll(async () => {
    // The minimal Debian systemd needs; curl-less (the scripts use node to wait for /healthz).
    const boot = await exec(
      'debootstrap',
      ['--variant=minbase', '--include=systemd,systemd-sysv,dbus,ca-certificates', codename!, rootfs],
      480_000,
    );
    if (boot.code !== 0) throw new Error(`debootstrap failed (${boot.code}):\n${boot.out.slice(-3000)}`);
    fs.writeFileSync(path.join(rootfs, 'etc/hostname'), 'footfall-systemd-test\n');
    fs.symlinkSync('/usr/lib/node_modules/npm/bin/npm-cli.js', path.join(rootfs, 'usr/bin/npm'));
    fs.mkdirSync(path.join(rootfs, 'usr/lib/node_modules'), { recursive: true });
    fs.mkdirSync(path.join(rootfs, 'opt/footfall'), { recursive: true });
    fs.mkdirSync(path.join(rootfs, 'usr/etc'), { recursive: true });
    [httpPort, mqttPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${httpPort}`;

    container = spawn(
      'systemd-nspawn',
      [
        '-q', '-D', rootfs, '--boot', '--register=no', '--keep-unit', '--console=passive',
        `--bind-ro=${fs.realpathSync(process.execPath)}:/usr/bin/node`,
        `--bind-ro=${npmCli}:/usr/lib/node_modules/npm`,
        `--bind-ro=${repo}:/opt/footfall`,
        // This machine's trust and npm settings (a proxy's CA, where there is one), as a shop PC's own would be.
        ...['/etc/ssl/certs/ca-certificates.crt', '/usr/etc/npmrc'].filter((f) => fs.existsSync(f)).map((f) => `--bind-ro=${f}`),
      ],
      { stdio: 'ignore' },
    );
    const nspawnPid = container.pid!;
    initPid = await until('the container to boot', 60_000, async () => {
      const children = fs.readFileSync(`/proc/${nspawnPid}/task/${nspawnPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      return children.length ? Number(children[0]) : undefined;
    });
    // The init process exists a moment before systemd's bus does: until then systemctl answers "Failed to connect to
    // bus" at once (seen on a loaded machine), so ask again until it can wait for the boot to finish.
    let running: Out = { code: null, out: '' };
    await until('systemd to answer on its bus', 120_000, async () => {
      running = await sh('systemctl is-system-running --wait', 120_000);
      return /Failed to connect to bus/.test(running.out) ? undefined : running;
    });
    expect(running.out.trim(), running.out).toMatch(/^(running|degraded)$/);
  }, 720_000);

  afterAll(async () => {
    if (container && container.exitCode === null) {
      const exited = new Promise<void>((resolve) => container!.once('exit', () => resolve()));
      container.kill('SIGTERM'); // systemd-nspawn shuts the container down in order
      const timer = setTimeout(() => container!.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    // The container's binds lived in its own mount namespace and went with it; debootstrap mounts /proc and /sys in
    // the target while it works, and leaves them there if it is stopped half-way. Nothing is deleted under a mount.
    const mountsUnder = (): string[] =>
      fs.readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(work + '/')).reverse();
    for (const m of mountsUnder()) spawnSync('umount', ['-l', m]);
    const stopped = !container || container.exitCode !== null || container.signalCode !== null;
    if (stopped && mountsUnder().length === 0) fs.rmSync(work, { recursive: true, force: true });
    else console.warn(`test/systemd.test.ts: left ${work} in place (${stopped ? 'still mounted' : 'container still running'})`);
  }, 60_000);

  it('installs head office: not started with --no-start, settings chosen, then started and answering', async () => {
    const first = await sh('bash /opt/footfall/packaging/install-server.sh --no-start');
    expect(first.code, first.out).toBe(0);
    expect(first.out).toContain('Creating system user footfall');
    expect(first.out).toContain('Not started (--no-start)');
    expect((await sh('systemctl is-enabled footfall-server')).out.trim()).toBe('enabled');
    expect((await sh('systemctl is-active footfall-server')).out.trim()).toBe('inactive');

    // As docs/operations.md says: choose the ports and the first admin in server.env, then start.
    const settings = [`FOOTFALL_HTTP_PORT=${httpPort}`, `FOOTFALL_MQTT_PORT=${mqttPort}`, `FOOTFALL_ADMIN_EMAIL=${adminEmail}`, 'FOOTFALL_ADMIN_PASSWORD=systemd-test-password-1'];
    const edit = await sh(`printf '%s\\n' ${settings.join(' ')} >> /etc/footfall/server.env && stat -c '%a %U' /etc/footfall/server.env`);
    expect(edit.out.trim()).toBe('600 root');

    const started = await sh('bash /opt/footfall/packaging/install-server.sh', 180_000);
    expect(started.code, started.out).toBe(0);
    expect(started.out).toContain(`Head office is running (http://127.0.0.1:${httpPort}/healthz answers)`);
    expect(started.out).toContain(`Sign in as ${adminEmail} with the FOOTFALL_ADMIN_PASSWORD of /etc/footfall/server.env`);
    expect(started.out).toContain(`shop PCs need this port and the MQTT port, ${mqttPort}`);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);

    // The service runs as the footfall user, its data folder private to it.
    const pid = (await sh('systemctl show -p MainPID --value footfall-server')).out.trim();
    expect((await sh(`awk '/^Uid:/ {print $2}' /proc/${pid}/status`)).out.trim()).toBe((await sh('id -u footfall')).out.trim());
    expect((await sh('stat -c "%a %U" /var/lib/footfall-server /var/lib/footfall-server/encryption.key /var/lib/footfall-server/footfall.db')).out.trim().split('\n')).toEqual([
      '700 footfall',
      '600 footfall',
      '600 footfall',
    ]);

    // Running the script again is an upgrade: settings and data kept, the service restarted.
    const again = await sh('bash /opt/footfall/packaging/install-server.sh', 180_000);
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain('Kept /etc/footfall/server.env');
    expect(again.out).toContain('Upgraded: settings and data kept.');
    expect((await sh('grep -c "^FOOTFALL_HTTP_PORT=" /etc/footfall/server.env')).out.trim()).toBe('1');
  }, 400_000);

  it('installs the agent (ffmpeg and models too), enrols it with an installation code, and the shop comes online', async () => {
    const admin = await api('POST', '/api/auth/login', undefined, { email: adminEmail, password: 'systemd-test-password-1' });
    const company = await api('POST', '/api/admin/clients', admin.access_token, { company_name: 'Systemd Stores', owner_email: 'owner@systemd.example', owner_name: 'Owner' });
    const owner = await api('POST', '/api/auth/login', undefined, { email: 'owner@systemd.example', password: company.password, device: 'test' });
    const shop = await api('POST', '/api/sites', owner.access_token, { name: 'Container Shop', timezone: 'Europe/London' });
    const { code } = await api('POST', `/api/sites/${shop.slug}/enrolment-code`, owner.access_token, { label: 'till PC' });

    // The script installs ffmpeg from Debian when it is missing.
    expect((await sh('command -v ffmpeg')).code).not.toBe(0);
    const install = await sh('bash /opt/footfall/packaging/install-agent.sh', 400_000);
    expect(install.code, install.out).toBe(0);
    expect(install.out).toContain('This PC is not enrolled yet');
    expect(install.out).not.toContain('face models could not be fetched');
    expect((await sh('command -v ffmpeg')).code).toBe(0);
    expect((await sh('stat -c "%U" /var/lib/footfall/models/manifest.json')).out.trim()).toBe('footfall');

    const enrol = await sh(`runuser -u footfall -- footfall enrol --server ${base} --code ${code}`);
    expect(enrol.code, enrol.out).toBe(0);
    const start = await sh('systemctl start footfall-agent && systemctl is-active footfall-agent');
    expect(start.out.trim(), start.out).toBe('active');

    const online = await until('the shop PC to come online', 90_000, async () => {
      const sites: any[] = await api('GET', '/api/sites', owner.access_token);
      const s = sites.find((x) => x.slug === shop.slug);
      return s?.online === true ? s : undefined;
    });
    expect(online.agent_version).toMatch(/\d+\.\d+\.\d+/);
    expect(online.dropped).toBe(0);

    // Head office restarts (an upgrade, a reboot): the shop PC reconnects by itself and heartbeats again.
    const before = online.last_heartbeat_at as string;
    const restart = await sh('systemctl restart footfall-server');
    expect(restart.code, restart.out).toBe(0);
    await until('head office to answer after its restart', 60_000, async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined));
    const again = await api('POST', '/api/auth/login', undefined, { email: 'owner@systemd.example', password: company.password, device: 'test' });
    await until('a heartbeat after the restart', 120_000, async () => {
      const sites: any[] = await api('GET', '/api/sites', again.access_token);
      const s = sites.find((x) => x.slug === shop.slug);
      return s?.online === true && s.last_heartbeat_at > before ? s : undefined;
    });

    // Both stop cleanly on systemd's SIGTERM, and head office logged no error.
    const stop = await sh('systemctl stop footfall-agent footfall-server; systemctl show -p Result,ExecMainStatus footfall-agent footfall-server');
    expect(stop.out.trim().split('\n').filter(Boolean).sort()).toEqual(['ExecMainStatus=0', 'ExecMainStatus=0', 'Result=success', 'Result=success']);
    const errors = await sh(`journalctl -u footfall-server -o cat | grep -E '"level":(50|60)' || true`);
    expect(errors.out.trim()).toBe('');
  }, 600_000);
});
