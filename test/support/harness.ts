import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { pino, type Logger } from 'pino';
import { loadConfig, type RawConfig } from '../../server/config.js';
import { startServer, type RunningServer } from '../../server/start.js';
import { responseChecker, type ResponseChecker } from './openapi-check.js';
import { createDatabaseAt } from './postgres.js';

/**
 * Under the server suite's run on PostgreSQL (FOOTFALL_TEST_POSTGRES_URL, vitest.postgres.config.ts): a database of
 * its own for this data folder, created on first start and kept for a restart on the same folder.
 */
async function testDatabase(dataDir: string, overrides: Partial<RawConfig>): Promise<Partial<RawConfig>> {
  const admin = process.env.FOOTFALL_TEST_POSTGRES_URL;
  if (!admin || overrides.FOOTFALL_DATABASE_URL !== undefined) return {};
  const file = path.join(dataDir, 'test-database-url');
  let url: string;
  if (fs.existsSync(file)) url = fs.readFileSync(file, 'utf8');
  else {
    url = await createDatabaseAt(admin);
    fs.writeFileSync(file, url);
  }
  return { FOOTFALL_DATABASE_URL: url };
}

/**
 * An in-process head office for tests: a real SQLite file in a temp folder, the real broker on a free TCP
 * port, real HTTP on a free port. Each call gets its own data folder.
 */
export interface Harness {
  url: string;
  server: RunningServer;
  dataDir: string;
  admin: { email: string; password: string };
  request<T = any>(method: string, path: string, opts?: RequestOpts): Promise<Reply<T>>;
  /** Signs in and returns the session envelope (throws unless 200). */
  login(email: string, password: string, device?: string): Promise<Envelope>;
  adminToken(): Promise<string>;
  /** Checks a server-sent event of a stream at `path` against the document (see HarnessOptions.openapi). */
  checkEvent(path: string, e: { event: string; data: string }): Promise<void>;
  /** Platform admin creates a company; returns its id, slug, owner email/password and an owner token. */
  company(name?: string): Promise<Company>;
  close(): Promise<void>;
}

export interface RequestOpts {
  token?: string;
  body?: unknown;
  /** Raw body text, sent as-is (for malformed JSON). */
  raw?: string;
  headers?: Record<string, string>;
}

export interface Reply<T> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Envelope {
  access_token: string;
  refresh_token: string;
  expires_at: string;
  user: { id: string; email: string; full_name: string; role: string; client_id: string; client_name: string };
}

export interface Company {
  id: string;
  slug: string;
  ownerEmail: string;
  ownerPassword: string;
  ownerToken: string;
  owner: Envelope;
}

export interface HarnessOptions {
  /** Start on this data folder instead of a new temp one (a restart: same database, same key). */
  dataDir?: string;
  /** Leave the data folder in place on close. Default: true when dataDir was given, else false. */
  keepDataDir?: boolean;
  /** The server's logger (default: silent, or FOOTFALL_TEST_LOG's level). */
  log?: Logger;
  /**
   * Every answer `request` gets is checked against the OpenAPI document (test/support/openapi-check.ts): by default
   * the one this server serves at /api/openapi.json; a document given here instead (a deliberately broken copy);
   * false: no check.
   */
  openapi?: Record<string, unknown> | false;
}

let counter = 0;

export async function startHarness(overrides: Partial<RawConfig> = {}, opts: HarnessOptions = {}): Promise<Harness> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-test-'));
  const keepDataDir = opts.keepDataDir ?? opts.dataDir !== undefined;
  const admin = { email: 'root@platform.test', password: 'admin-password-1' };
  const database = await testDatabase(dataDir, overrides);
  const config = loadConfig(
    {
      FOOTFALL_DATA_DIR: dataDir,
      FOOTFALL_HTTP_HOST: '127.0.0.1',
      FOOTFALL_HTTP_PORT: '0',
      FOOTFALL_MQTT_HOST: '127.0.0.1',
      FOOTFALL_MQTT_PORT: '0',
      FOOTFALL_ADMIN_EMAIL: admin.email,
      FOOTFALL_ADMIN_PASSWORD: admin.password,
      FOOTFALL_LOG_LEVEL: 'silent',
    },
    { ...overrides, ...database },
  );
  const log = opts.log ?? pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
  const server = await startServer(config, { log, announce: () => {} }).catch((err: unknown) => {
    if (!keepDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  return {
    ...headOfficeApi(server.url, admin, opts.openapi),
    server,
    dataDir,
    async close() {
      await server.close();
      if (!keepDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A second process of the same head office (PostgreSQL runs only): its own data folder with `a`'s server key and
 * database, so the two share the database and can open each other's sealed secrets.
 */
export async function startSecondHeadOffice(a: Harness, overrides: Partial<RawConfig> = {}): Promise<Harness> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-test-'));
  for (const f of ['encryption.key', 'test-database-url']) fs.copyFileSync(path.join(a.dataDir, f), path.join(dir, f));
  return await startHarness(overrides, { dataDir: dir, keepDataDir: false });
}

/** What a test asks of a head office over HTTP: the harness's, for any URL (a head office in another process, a proxy in front of several). */
export type HeadOfficeApi = Pick<Harness, 'url' | 'admin' | 'request' | 'login' | 'adminToken' | 'checkEvent' | 'company'>;

/** Requests to the head office at `url` (answers checked as HarnessOptions.openapi says), signed in as `admin` where asked. */
export function headOfficeApi(url: string, admin: Harness['admin'], document?: HarnessOptions['openapi']): HeadOfficeApi {
  let checker: Promise<ResponseChecker> | undefined;
  const checkerOf = () =>
    (checker ??= (async () => {
      if (document) return responseChecker(document);
      const res = await fetch(url + '/api/openapi.json');
      if (res.status !== 200) throw new Error(`GET /api/openapi.json answered ${res.status}`);
      return responseChecker((await res.json()) as Record<string, unknown>);
    })());

  const request: Harness['request'] = async (method, p, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.raw !== undefined) {
      body = opts.raw;
      headers['Content-Type'] ??= 'application/json';
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(url + p, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    if (document !== false) (await checkerOf()).check({ method, path: p, status: res.status, contentType: res.headers.get('content-type') ?? '', body: parsed });
    return { status: res.status, body: parsed as any, headers: res.headers };
  };

  const login: Harness['login'] = async (email, password, device) => {
    const r = await request<Envelope>('POST', '/api/auth/login', { body: { email, password, ...(device ? { device } : {}) } });
    if (r.status !== 200) throw new Error(`login ${email} failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  let adminTok: string | undefined;
  const adminToken = async () => (adminTok ??= (await login(admin.email, admin.password)).access_token);

  const company: Harness['company'] = async (name) => {
    counter++;
    const n = `${process.pid}-${counter}`;
    const r = await request('POST', '/api/admin/clients', {
      token: await adminToken(),
      body: { company_name: name ?? `Company ${n}`, owner_email: `owner-${n}@shop.test`, owner_name: `Owner ${n}` },
    });
    if (r.status !== 201) throw new Error(`company create failed: ${r.status} ${JSON.stringify(r.body)}`);
    const owner = await login(r.body.owner_email, r.body.password);
    return { id: r.body.client_id, slug: r.body.slug, ownerEmail: r.body.owner_email, ownerPassword: r.body.password, ownerToken: owner.access_token, owner };
  };

  return {
    url,
    admin,
    request,
    async checkEvent(p, e) {
      if (document !== false) (await checkerOf()).checkEvent({ path: p, event: e.event, data: e.data });
    },
    login,
    adminToken,
    company,
  };
}

/** Reads head office's database file itself (a second, read-only connection), not the API: what is really stored. */
export function onDisk<T>(h: Pick<Harness, 'dataDir'>, fn: (db: Database.Database) => T): T {
  const db = new Database(path.join(h.dataDir, 'footfall.db'), { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
