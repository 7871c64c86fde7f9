import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, connectAsync, type IClientOptions } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPath } from '../agent/capture/ffmpeg-bin.js';
import { configSchema, loadConfig } from '../server/config.js';
import { startHarness, type Harness } from './support/harness.js';
import { dynsecAsAdmin, mosquittoMissing, type TestMosquitto } from './support/mosquitto.js';
import { closedPort } from './support/ports.js';
import { openShop } from './support/shop-pc.js';
import { noteSkip } from './support/skips.js';

/**
 * packaging/scale-out/ (docs/scale-out.md, "Reference deployment: two head offices") against the code and the real
 * tools: the settings the files name are head office's, the proxy's servers and timeouts fit the processes, the
 * PostgreSQL notes count the pools head office opens; `systemd-analyze verify` on the template unit; `haproxy -c` on
 * the proxy's config and HAProxy itself in front of two real head offices; Mosquitto started on its config the way
 * Debian's main file includes it. Each tool that is missing skips its part with the reason printed.
 */

const FILE = 'test/scale-out-config.test.ts';
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(repo, 'packaging/scale-out');
const read = (name: string): string => fs.readFileSync(path.join(dir, name), 'utf8');
const instances = fs.readdirSync(dir).filter((f) => /^server-\d+\.env$/.test(f)).sort();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-scale-out-'));
fs.chmodSync(tmp, 0o755); // mosquitto (as root it would switch users) and haproxy read files here
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** KEY=VALUE lines of an env file (comments and blank lines skipped), as systemd's EnvironmentFile= reads them. */
function envOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/^\s*([A-Z_][A-Z0-9_]*)=(.*)$/gm)) out[m[1]!] = m[2]!.trim();
  return out;
}
const unitText = read('footfall-server@.service');
const unitEnv = Object.fromEntries([...unitText.matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
/** Everything one process gets: the unit's Environment=, then server.env's lines, then its own file (later wins). */
const processEnv = (file: string) => ({ ...unitEnv, ...envOf(read('shared.env')), ...envOf(read(file)) });
const seconds = (v: string): number => Number(/^(\d+)(ms|s|m)?$/.exec(v)![1]) * ({ ms: 0.001, s: 1, m: 60 } as Record<string, number>)[/[a-z]+$/.exec(v)?.[0] ?? 'ms']!;
const defaultOf = (key: keyof typeof configSchema.shape): unknown => configSchema.shape[key].parse(undefined);

describe('the files against head office', () => {
  it('names only FOOTFALL_* variables head office reads, and every process loads its settings', () => {
    const keys = new Set(Object.keys(configSchema.shape));
    for (const f of fs.readdirSync(dir)) {
      const named = [...read(f).matchAll(/\bFOOTFALL_[A-Z0-9_]+/g)].map((m) => m[0]);
      expect(named.filter((k) => !keys.has(k)), f).toEqual([]);
    }
    expect(instances.length).toBeGreaterThanOrEqual(2);
    const loaded = instances.map((f) => loadConfig(processEnv(f)));
    const ids = loaded.map((c) => c.FOOTFALL_MQTT_CLIENT_ID);
    expect(new Set(ids).size, 'client ids are unique').toBe(ids.length);
    expect(ids).not.toContain(defaultOf('FOOTFALL_MQTT_CLIENT_ID'));
    const ports = loaded.map((c) => c.FOOTFALL_HTTP_PORT);
    expect(new Set(ports).size, 'ports are unique').toBe(ports.length);
    for (const c of loaded) {
      expect(c.FOOTFALL_TRUST_PROXY).toBe(true);
      expect(c.FOOTFALL_DATABASE_URL).toMatch(/^postgres:\/\//);
      expect(c.FOOTFALL_MQTT_URL).toMatch(/^mqtt/);
    }
    // The shared file first, the process's own after it, both required (no "-"): a process never runs on the default id.
    expect([...unitText.matchAll(/^EnvironmentFile=(.*)$/gm)].map((m) => m[1])).toEqual(['/etc/footfall/server.env', '/etc/footfall/server-%i.env']);
  });

  it("keeps footfall-server.service's settings and hardening, line for line", () => {
    const directives = (text: string) =>
      text.split('\n').filter((l) => l.trim() && !l.startsWith('#') && !/^(Description|Documentation|EnvironmentFile)=/.test(l));
    expect(directives(unitText)).toEqual(directives(fs.readFileSync(path.join(repo, 'packaging/footfall-server.service'), 'utf8')));
  });

  it("gives the proxy each process's port, in both backends", () => {
    const cfg = read('haproxy.cfg');
    const servers = [...cfg.matchAll(/^\s*server ho(\d+) @HO(\d+)@:(\d+)/gm)].map((m) => ({ n: m[1]!, placeholder: m[2]!, port: Number(m[3]) }));
    expect(servers.length).toBe(2 * instances.length);
    for (const s of servers) {
      expect(s.placeholder).toBe(s.n);
      expect(s.port, `ho${s.n}`).toBe(loadConfig(processEnv(`server-${s.n}.env`)).FOOTFALL_HTTP_PORT);
    }
  });

  it("sets the proxy's timeouts above the streams' keep-alives and the assistant's deadline", () => {
    const cfg = read('haproxy.cfg');
    const timeout = (name: string) => seconds(new RegExp(`^\\s*timeout ${name} (\\S+)`, 'm').exec(cfg)![1]!);
    const liveKeepAlive = Number(/const KEEP_ALIVE_MS = ([\d_]+);/.exec(fs.readFileSync(path.join(repo, 'server/cameras/live-routes.ts'), 'utf8'))![1]!.replace(/_/g, '')) / 1000;
    const quiet = Math.max(defaultOf('FOOTFALL_SSE_KEEPALIVE_S') as number, liveKeepAlive);
    // At least two keep-alives may go missing before a stream is taken for dead.
    expect(timeout('client')).toBeGreaterThanOrEqual(3 * quiet);
    expect(timeout('server')).toBeGreaterThanOrEqual(3 * quiet);
    const long = seconds(/http-request set-timeout server (\S+) if \{ path_beg \/api\/reports\/ \/api\/assistant \}/.exec(cfg)![1]!);
    expect(long).toBeGreaterThan((defaultOf('FOOTFALL_ASSISTANT_TIMEOUT_MS') as number) / 1000);
  });

  it("counts the PostgreSQL pools head office opens, and max_connections holds the processes'", () => {
    const src = (f: string) => fs.readFileSync(path.join(repo, f), 'utf8');
    const main = Number(/opts\.pool \?\? (\d+)/.exec(src('server/db/store.ts'))![1]);
    const ingest = Number(/openStore\(config, \{ pool: (\d+)/.exec(src('server/visits/ingest-worker.ts'))![1]);
    // Each LISTEN session is one client of its own per process (server/db/pg/listen.ts): the arrivals relay's and
    // the read cache's, and only the PgListen class opens a client outside the pools.
    const listens = ['server/visits/arrivals-relay.ts', 'server/db/pg/changes.ts'].filter((f) => /new PgListen\(/.test(src(f))).length;
    expect(src('server/db/pg/listen.ts').match(/new pg\.Client\(/g)).toHaveLength(1);
    const all = main + ingest + listens;
    const notes = read('postgresql.conf').replace(/\n# /g, ' ');
    expect(notes).toContain(`opens at most ${all}: ${main} for its main thread's pool`);
    expect(notes).toContain(`${ingest} for its visit-ingest thread's`);
    const docs = fs.readFileSync(path.join(repo, 'docs/scale-out.md'), 'utf8').replace(/\s+/g, ' ');
    expect(docs).toContain(`Each head-office process opens at most ${all} connections: ${main} for its main thread's pool (\`server/db/store.ts\`), ${ingest} for its visit-ingest thread's`);
    const max = Number(/^max_connections = (\d+)/m.exec(notes)![1]);
    expect(max).toBeGreaterThanOrEqual(all * instances.length + 3 + 1);
  });
});

// --- systemd -------------------------------------------------------------------------------------------------------

/** The unit as installed: the real node and application folder in place of /usr/bin/node and /opt/footfall. */
const installed = (text: string) => text.replace(/^(?!#)(.*)$/gm, (l) => l.replaceAll('/usr/bin/node', fs.realpathSync(process.execPath)).replaceAll('/opt/footfall', repo));
const verify = (file: string) => spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
const systemdSkip = ((): string | undefined => {
  if (!onPath('systemd-analyze')) return 'no systemd-analyze (systemd)';
  // Whether verify works here at all: on head office's own unit, which the installer tests run for real.
  const control = path.join(tmp, 'control', 'footfall-server.service');
  fs.mkdirSync(path.dirname(control));
  fs.writeFileSync(control, installed(fs.readFileSync(path.join(repo, 'packaging/footfall-server.service'), 'utf8')));
  const r = verify(control);
  return r.status === 0 && !`${r.stdout}${r.stderr}`.trim() ? undefined : `systemd-analyze verify does not work here: ${`${r.stdout}${r.stderr}`.trim().slice(0, 200)}`;
})();
if (systemdSkip) noteSkip(FILE, systemdSkip);

describe.skipIf(systemdSkip !== undefined)('systemd-analyze verify', () => {
  it('accepts an instance of the template unit without a warning', () => {
    const unitDir = path.join(tmp, 'units');
    fs.mkdirSync(unitDir);
    fs.writeFileSync(path.join(unitDir, 'footfall-server@.service'), installed(unitText));
    const r = verify(path.join(unitDir, 'footfall-server@1.service')); // found through the template beside it
    expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
    expect(r.status).toBe(0);
  });
});

// --- TLS material for the proxy and the broker ---------------------------------------------------------------------

const certFile = path.join(tmp, 'footfall.crt');
const keyFile = path.join(tmp, 'footfall.key');
const tlsSkip = ((): string | undefined => {
  if (!onPath('openssl')) return 'no openssl (apt-get install openssl): no certificate for the TLS listeners';
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=footfall.test', '-addext', 'subjectAltName=DNS:footfall.test', '-keyout', keyFile, '-out', certFile], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `openssl could not make a certificate: ${r.stderr.slice(0, 200)}`;
})();
if (tlsSkip) noteSkip(FILE, tlsSkip);

// --- HAProxy -------------------------------------------------------------------------------------------------------

const haproxySkip = tlsSkip ?? (onPath('haproxy') ? undefined : 'no haproxy (apt-get install haproxy)');
if (haproxySkip && !tlsSkip) noteSkip(FILE, haproxySkip);

/** haproxy.cfg with its placeholders filled: the certificate, and both processes on this machine at `ports`. */
function filledProxy(ports: number[]): string {
  const pem = path.join(tmp, 'footfall.pem');
  fs.writeFileSync(pem, fs.readFileSync(certFile, 'utf8') + fs.readFileSync(keyFile, 'utf8'), { mode: 0o600 });
  return read('haproxy.cfg')
    .replaceAll('@TLS_CERT@', pem)
    .replace(/@HO(\d+)@:\d+/g, (_, n: string) => `127.0.0.1:${ports[Number(n) - 1]}`);
}

/** One request through the proxy from a client address of our choosing (127.0.0.0/8 is all this machine's). */
function call(base: { port: number; tls: boolean }, method: string, p: string, opts: { from?: string; token?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers, ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...(opts.body ? { 'content-type': 'application/json' } : {}) };
    const o = { host: '127.0.0.1', port: base.port, method, path: p, headers, localAddress: opts.from ?? '127.0.0.1', agent: false as const };
    const req = base.tls ? https.request({ ...o, ca: fs.readFileSync(certFile), servername: 'footfall.test' }) : http.request(o);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body ? JSON.stringify(opts.body) : undefined);
  });
}

/** Polls `probe` (every 250 ms, up to 15 s) until it gives `want`; the last value. */
async function until<T>(probe: () => Promise<T>, want: T): Promise<T> {
  let v = await probe();
  for (const deadline = Date.now() + 15_000; v !== want && Date.now() < deadline; v = await probe()) await new Promise((r) => setTimeout(r, 250));
  return v;
}

/** A server-sent-events stream through the proxy: its status, its first chunk, and when it ends. */
function openStream(port: number, p: string, token: string) {
  return new Promise<{ status: number; first: Promise<string>; ended: Promise<boolean>; close(): void }>((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: p, headers: { authorization: `Bearer ${token}` }, ca: fs.readFileSync(certFile), servername: 'footfall.test', agent: false });
    req.on('response', (res) => {
      const first = new Promise<string>((r) => res.once('data', (d: Buffer) => r(d.toString())));
      const ended = new Promise<boolean>((r) => res.once('close', () => r(true)));
      resolve({ status: res.statusCode!, first, ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(haproxySkip !== undefined)('HAProxy', () => {
  it('haproxy -c accepts the config with its placeholders filled', () => {
    const cfg = path.join(tmp, 'haproxy-check.cfg');
    fs.writeFileSync(cfg, filledProxy([8081, 8082]));
    const r = spawnSync('haproxy', ['-c', '-f', cfg], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/\[WARNING\]|\[ALERT\]/);
  });

  describe('in front of two head offices', () => {
    const ho: Harness[] = [];
    let proxy: ChildProcess | undefined;
    let plain = { port: 0, tls: false };
    let secure = { port: 0, tls: true };
    let proxyLog = '';
    let firstPort = 0;

    beforeAll(async () => {
      for (let i = 0; i < 2; i++) ho.push(await startHarness({ FOOTFALL_TRUST_PROXY: true, FOOTFALL_LOGIN_MAX_FAILURES_IP: 3, FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 100 }));
      plain = { port: await closedPort(), tls: false };
      secure = { port: await closedPort(), tls: true };
      // As installed, but run in the foreground by this user: no chroot, user switch, daemon or system log; the
      // runtime socket in the test's folder; the public ports on loopback. HAProxy needs about two file descriptors
      // per connection and raises its own limit at start; where the hard limit is lower than maxconn needs (a
      // container; Debian 12's systemd gives services 524288), maxconn is lowered to fit.
      const hard = Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()) || Infinity;
      const cfg = filledProxy(ho.map((h) => h.server.httpPort))
        .replace(/^\s*(chroot|user|group|daemon|log \/dev\/log)\b.*$/gm, '')
        .replace(/^(\s*maxconn) (\d+)$/m, (_, k: string, n: string) => `${k} ${Math.min(Number(n), Math.floor((hard - 1000) / 2))}`)
        .replace('/run/haproxy/admin.sock', path.join(tmp, 'haproxy.sock'))
        .replace(/^(\s*bind) :80$/m, `$1 127.0.0.1:${plain.port}`)
        .replace(/^(\s*bind) :443 /m, `$1 127.0.0.1:${secure.port} `);
      const file = path.join(tmp, 'haproxy-run.cfg');
      fs.writeFileSync(file, cfg);
      proxy = spawn(onPath('haproxy')!, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
      proxy.stdout!.on('data', (d: Buffer) => (proxyLog += d.toString()));
      proxy.stderr!.on('data', (d: Buffer) => (proxyLog += d.toString()));
      for (const deadline = Date.now() + 15_000; ; ) {
        if ((await call(secure, 'GET', '/healthz').catch(() => undefined))?.status === 200) break;
        if (Date.now() > deadline || proxy.exitCode !== null) throw new Error(`haproxy did not answer: ${proxyLog}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }, 60_000);
    afterAll(async () => {
      if (proxy && proxy.exitCode === null) {
        const exited = new Promise((r) => proxy!.once('exit', r));
        proxy.kill('SIGTERM');
        await exited;
      }
      for (const h of ho) await h.close();
    });

    it('sends plain http to https with the method kept, and keeps /metrics to itself', async () => {
      const r = await call(plain, 'POST', '/api/agent/cameras/state');
      expect(r.status).toBe(308);
      expect(r.headers.location).toBe(`https://127.0.0.1:${plain.port}/api/agent/cameras/state`); // the Host header as sent
      expect((await call(secure, 'GET', '/metrics')).status).toBe(404);
    });

    it('takes turns between the processes, and sends every live-view path to the first', async () => {
      const [t1, t2] = await Promise.all(ho.map((h) => h.adminToken()));
      // Each head office knows only its own token: 200 from the one that issued it, 401 from the other.
      const me = await Promise.all([0, 1, 2, 3].map(() => call(secure, 'GET', '/api/auth/me', { token: t1 })));
      expect(me.map((r) => r.status).sort()).toEqual([200, 200, 401, 401]);
      for (let i = 0; i < 4; i++) {
        // ho1 does not know ho2's token; ho1 knows its own and has no such shop.
        expect((await call(secure, 'GET', '/api/sites/nowhere/live', { token: t2 })).status).toBe(401);
        expect((await call(secure, 'GET', '/api/sites/nowhere/live', { token: t1 })).status).toBe(404);
        expect((await call(secure, 'GET', '/api/cameras/00000000-0000-4000-8000-000000000000/live', { token: t2 })).status).toBe(401);
      }
    });

    it('goes on without a stopped process: another answers at once, live view moves to the next', async () => {
      const t2 = await ho[1]!.adminToken();
      firstPort = ho[0]!.server.httpPort;
      await ho[0]!.close(); // process 1 stops
      ho.shift();
      // Before the health check has noticed: a refused connection is tried again on the other process.
      const me = await Promise.all([0, 1, 2, 3].map(() => call(secure, 'GET', '/api/auth/me', { token: t2 })));
      expect(me.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      // Once it has (2 failed checks 2 s apart), live view is served by process 2: its token, and no such shop there.
      expect(await until(async () => (await call(secure, 'GET', '/api/sites/nowhere/live', { token: t2 })).status, 404)).toBe(404);
    });

    it("counts a per-IP limit against the caller's address, whatever X-Forwarded-For it sent", async () => {
      // Sign-in failures from one address (3 allowed here), each with a different made-up header.
      const guess = (from: string, forged: string) =>
        call(secure, 'POST', '/api/auth/login', { from, headers: { 'x-forwarded-for': forged }, body: { email: `spray-${forged}@nowhere.test`, password: 'guess-password' } });
      for (let i = 0; i < 3; i++) expect((await guess('127.0.0.3', `10.0.0.${i}`)).status).toBe(401);
      expect((await guess('127.0.0.3', '10.0.0.99')).status).toBe(429);
      expect((await guess('127.0.0.4', '127.0.0.3')).status).toBe(401);
    });

    it('passes the arrivals stream through as it is written', async () => {
      const token = (await ho[0]!.company()).ownerToken; // process 2, the one left
      const s = await openStream(secure.port, '/api/visits/stream', token);
      expect(`${s.status} ${await s.first}`).toMatch(/^200 retry: 2000/);
      s.close();
    });

    it('gives live view back to process 1 when it returns, cutting the views still on process 2', async () => {
      const c = await ho[0]!.company();
      const shop = await openShop(ho[0]!, c.ownerToken, { name: 'Live' });
      const view = await openStream(secure.port, `/api/sites/${shop.slug}/live`, c.ownerToken);
      expect(`${view.status} ${await view.first}`).toMatch(/^200 event: waiting/);
      ho.push(await startHarness({ FOOTFALL_HTTP_PORT: firstPort })); // process 1 again, on its port
      expect(await until(async () => ((await Promise.race([view.ended, new Promise((r) => setTimeout(r, 250, false))])) ? 'cut' : 'open'), 'cut')).toBe('cut');
      // Its new token is unknown to process 2: live view is on process 1 again.
      const t1 = await ho[1]!.adminToken();
      expect((await call(secure, 'GET', '/api/sites/nowhere/live', { token: t1 })).status).toBe(404);
    });
  });
});

// --- Mosquitto -----------------------------------------------------------------------------------------------------

const mosquittoSkip = tlsSkip ?? mosquittoMissing();
if (mosquittoSkip && !tlsSkip) noteSkip(FILE, mosquittoSkip);

/** Debian 12's /etc/mosquitto/mosquitto.conf, when this machine has none of its own. */
const DEBIAN_MAIN = 'pid_file /run/mosquitto/mosquitto.pid\n\npersistence true\npersistence_location /var/lib/mosquitto/\n\nlog_dest file /var/log/mosquitto/mosquitto.log\n\ninclude_dir /etc/mosquitto/conf.d\n';

describe.skipIf(mosquittoSkip !== undefined)('Mosquitto', () => {
  const base = path.join(tmp, 'mosquitto');
  const admin = { username: 'footfall', password: 'head-office-broker-password-1' };
  let broker: ChildProcess | undefined;
  let output = '';
  let shops = 0;
  let office = 0;

  const start = async () => {
    broker = spawn(onPath('mosquitto')!, ['-c', path.join(base, 'mosquitto.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    broker.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    broker.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    for (const deadline = Date.now() + 10_000; ; ) {
      const up = await connectAsync(`mqtt://127.0.0.1:${office}`, { ...admin, clientId: 'probe-start', reconnectPeriod: 0 }).catch(() => undefined);
      if (up) return void (await up.endAsync());
      if (Date.now() > deadline || broker.exitCode !== null) throw new Error(`mosquitto did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = async () => {
    if (!broker || broker.exitCode !== null) return;
    const exited = new Promise((r) => broker!.once('exit', r));
    broker.kill('SIGTERM'); // a clean stop: Mosquitto writes mosquitto.db
    await exited;
  };

  beforeAll(async () => {
    fs.mkdirSync(path.join(base, 'conf.d'), { recursive: true });
    [shops, office] = [await closedPort(), await closedPort()];
    // Debian's main file (this machine's, if it has one), its paths moved into the test's folder.
    const main = fs.existsSync('/etc/mosquitto/mosquitto.conf') ? fs.readFileSync('/etc/mosquitto/mosquitto.conf', 'utf8') : DEBIAN_MAIN;
    expect(main).toMatch(/^persistence_location /m);
    fs.writeFileSync(
      path.join(base, 'mosquitto.conf'),
      main
        .replace(/^pid_file .*$/m, `pid_file ${base}/mosquitto.pid`)
        .replace(/^persistence_location .*$/m, `persistence_location ${base}/`)
        .replace(/^log_dest file .*$/m, 'log_dest stderr')
        .replace(/^include_dir .*$/m, `include_dir ${base}/conf.d`),
    );
    const plugin = /^plugin (\S+)$/m.exec(read('mosquitto.conf'))![1]!;
    const pluginHere = [plugin, ...['/usr/lib/aarch64-linux-gnu', '/usr/lib', '/usr/local/lib'].map((d) => path.join(d, path.basename(plugin)))].find((p) => fs.existsSync(p))!;
    const dynsec = path.join(base, 'dynamic-security.json');
    spawnSync(onPath('mosquitto_ctrl')!, ['dynsec', 'init', dynsec, admin.username, admin.password], { stdio: 'ignore' });
    fs.writeFileSync(
      path.join(base, 'conf.d', 'footfall.conf'),
      read('mosquitto.conf')
        .replace(/^listener 8883$/m, `listener ${shops} 127.0.0.1`)
        .replace(/^listener 1883 @PRIVATE_ADDRESS@$/m, `listener ${office} 127.0.0.1`)
        .replace(/^certfile .*$/m, `certfile ${certFile}`)
        .replace(/^keyfile .*$/m, `keyfile ${keyFile}`)
        .replace(/^plugin .*$/m, `plugin ${pluginHere}`)
        .replace(/^plugin_opt_config_file .*$/m, `plugin_opt_config_file ${dynsec}`) +
        // Run as root (a CI container), Mosquitto would switch to the user mosquitto, who cannot read the key here.
        (process.getuid?.() === 0 ? 'user root\n' : ''),
    );
    await start();
  }, 30_000);
  afterAll(stop);

  const tls = (): IClientOptions => ({ ca: fs.readFileSync(certFile), servername: 'footfall.test', rejectUnauthorized: true });

  it("listens for shop PCs with TLS and for head office on the private address, and refuses anonymous clients", async () => {
    const viaTls = await connectAsync(`mqtts://127.0.0.1:${shops}`, { ...admin, ...tls(), clientId: 'probe-tls', reconnectPeriod: 0 });
    await viaTls.endAsync();
    const plain = await connectAsync(`mqtt://127.0.0.1:${office}`, { ...admin, clientId: 'probe-plain', reconnectPeriod: 0 });
    await plain.endAsync();
    await expect(connectAsync(`mqtt://127.0.0.1:${office}`, { clientId: 'probe-anon', reconnectPeriod: 0 })).rejects.toThrow(/Not authorized|Bad username/i);
    await expect(connectAsync(`mqtts://127.0.0.1:${shops}`, { ...tls(), clientId: 'probe-anon-tls', reconnectPeriod: 0 })).rejects.toThrow(/Not authorized|Bad username/i);
  });

  it("keeps a stopped process's share of a shared subscription for it, through a restart of the broker", async () => {
    // Mosquitto 2.0.11's dynamic security checks a shared subscription against its whole filter, $share/<group>/
    // included: probe/# alone does not allow $share/footfall/probe/# (docs/scale-out.md).
    const acls = ['publishClientSend', 'publishClientReceive', 'subscribePattern'].map((acltype) => ({ acltype, topic: 'probe/#', allow: true }));
    const role = { command: 'createRole', rolename: 'probe', acls: [...acls, { acltype: 'subscribePattern', topic: '$share/footfall/probe/#', allow: true }] };
    const clients = ['probe-a', 'probe-b', 'probe-pub'].map((username) => ({ command: 'createClient', username, password: 'probe-password-1', roles: [{ rolename: 'probe' }] }));
    const answers = await dynsecAsAdmin({ url: `mqtt://127.0.0.1:${office}`, admin } as TestMosquitto, [role, ...clients]);
    expect(answers.filter((a) => a.error)).toEqual([]);
    // Two head-office-like persistent sessions sharing one subscription, as the ingest sessions do.
    const member = async (id: string, got: string[]) => {
      const c = await connectAsync(`mqtt://127.0.0.1:${office}`, { username: id, password: 'probe-password-1', clientId: id, clean: false, protocolVersion: 5, properties: { sessionExpiryInterval: 0xffffffff }, reconnectPeriod: 0 });
      c.on('message', (_t, p) => got.push(p.toString()));
      await c.subscribeAsync('$share/footfall/probe/#', { qos: 1 });
      return c;
    };
    const [a, b] = [[] as string[], [] as string[]];
    const ca = await member('probe-a', a);
    const cb = await member('probe-b', b);
    await cb.endAsync(); // process b stops
    const pub = await connectAsync(`mqtt://127.0.0.1:${office}`, { username: 'probe-pub', password: 'probe-password-1', clientId: 'probe-pub', reconnectPeriod: 0 });
    for (let i = 0; i < 4; i++) await pub.publishAsync('probe/visit', `v${i}`, { qos: 1 });
    await pub.endAsync();
    for (const deadline = Date.now() + 5000; a.length < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    await ca.endAsync();
    // Mosquitto went on giving the stopped session its turn: the running one got half.
    expect(a.length).toBe(2);
    await stop();
    await start();
    // b comes back under its client id: what Mosquitto kept for it (written at the clean stop) is delivered.
    const back: string[] = [];
    const again = connect(`mqtt://127.0.0.1:${office}`, { username: 'probe-b', password: 'probe-password-1', clientId: 'probe-b', clean: false, protocolVersion: 5, properties: { sessionExpiryInterval: 0xffffffff }, reconnectPeriod: 0 });
    again.on('message', (_t, p) => back.push(p.toString())); // before the CONNACK: the queued ones follow it at once
    for (const deadline = Date.now() + 5000; back.length < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    await again.endAsync();
    expect([...a, ...back].sort()).toEqual(['v0', 'v1', 'v2', 'v3']);
  });
});
