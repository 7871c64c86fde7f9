/**
 * Head office as several processes (issue 27, docs/scale-out.md), end to end: two head-office processes started as a
 * user runs them (test/support/head-office-process.ts) on one real PostgreSQL cluster and one real Mosquitto 2 with
 * its dynamic-security plugin, a round-robin proxy in front of them (test/support/round-robin-proxy.ts) for the
 * console's calls, and shop PCs as real mqtt.js clients whose broker logins came from enrolment through the API. The
 * two processes have data folders of their own, as on two machines (photos, pictures and live view must not rely on
 * a shared one).
 *
 * Every scenario has its company of its own and checks what was stored (the rows in PostgreSQL) and what the API and
 * the arrival streams answer, not what a process says it did. Nothing waits for a time: each wait is for a condition,
 * with a deadline.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { VisitMessage } from '../shared/messages.js';
import { visitOf } from './support/faces.js';
import { headOfficeApi, type Company, type HeadOfficeApi } from './support/harness.js';
import { headOfficeProcess, metric, sharedSettings, type HeadOfficeProcess } from './support/head-office-process.js';
import { mosquittoMissing, startMosquitto, type TestMosquitto } from './support/mosquitto.js';
import { postgresMissing, startPostgres, type TestPostgres } from './support/postgres.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './support/round-robin-proxy.js';
import { addCamera, jpeg, syntheticFace, upload, waitFor, type HeadOfficeReach } from './support/shop-pc.js';
import { noteSkip } from './support/skips.js';
import { pumpSse, type SseEvent } from './support/sse.js';
import { openStream, shopPc, type ShopPc } from './support/visits.js';

const FILE = 'test/scale-out-e2e.test.ts';
const missing = postgresMissing() ?? mosquittoMissing();
if (missing) noteSkip(FILE, missing);

const ADMIN = { email: 'root@scale-out.test', password: 'admin-password-1' };
const MODEL = 'scale-out-test-model';
/** How long a wait for stored rows may take on a loaded 2-core machine. */
const STORED_MS = 30_000;

/** Message times: an hour ago, one second apart, so no two sightings overlap and each is a visit (FOOTFALL_VISIT_GAP_S=0). */
let clock = Date.now() - 3_600_000;
const nextTime = () => new Date((clock += 1000)).toISOString();

/** What was published, to compare with what was stored: visit id to person (undefined: footfall, no face). */
type Sent = Map<string, number | undefined>;

/** A visit of person `person` (a face nobody else has: test/support/shop-pc.ts syntheticFace), or footfall without a face. */
function visit(sent: Sent, person: number | undefined, at = nextTime()): VisitMessage {
  const face = person === undefined ? {} : { embedding: syntheticFace(person), recognition_model: MODEL, quality: 0.9, passed_gate: true };
  const v = visitOf({ model: MODEL }, undefined, { occurred_at: at, ...face });
  sent.set(v.visit_id, person);
  return v;
}

describe.skipIf(missing !== undefined)('head office as two processes behind a proxy (real PostgreSQL, Mosquitto, shop PCs)', () => {
  let tmp: string;
  let cluster: TestPostgres;
  let mq: TestMosquitto;
  let db: pg.Client;
  let hoA: HeadOfficeProcess;
  let hoB: HeadOfficeProcess;
  let proxy: RoundRobinProxy;
  /** The console's way in: through the proxy. */
  let api: HeadOfficeApi;
  let reach: HeadOfficeReach;
  /** Each process directly. */
  let direct: [HeadOfficeApi, HeadOfficeApi];
  const pcs: ShopPc[] = [];
  let nextPerson = 1;
  /** A test failed: the processes' logs are kept (their folder is printed). */
  let failed = false;

  const rowCount = async (query: string, companyId: string): Promise<number> => Number((await db.query<{ n: string }>(query, [companyId])).rows[0]!.n);
  const sightings = (companyId: string) => rowCount('select count(*) as n from sightings where company_id = $1', companyId);
  const visits = (companyId: string) => rowCount('select count(*) as n from visits where company_id = $1', companyId);
  const customers = (companyId: string) => rowCount('select count(*) as n from customers where company_id = $1', companyId);
  /** Waits until the company has `n` sightings (each a visit_id taken once), then checks the rows: one visit per sighting. */
  const storedExactly = async (companyId: string, n: number) => {
    await waitFor(async () => (await sightings(companyId)) >= n, STORED_MS, 100).catch(() => undefined); // the counts below say what came
    expect(await sightings(companyId)).toBe(n);
    expect(await visits(companyId)).toBe(n);
  };
  const received = async () => Promise.all([hoA, hoB].map(async (p) => metric(await p.metrics(), 'footfall_ingest_received_total')));
  const stored = async () => Promise.all([hoA, hoB].map(async (p) => metric(await p.metrics(), 'footfall_ingest_visits_total', '{outcome="stored"}')));

  async function shopPcs(company: Company, names: string[]): Promise<ShopPc[]> {
    const made: ShopPc[] = [];
    for (const name of names) made.push(await shopPc(reach, company.ownerToken, company.slug, name));
    pcs.push(...made);
    return made;
  }

  /**
   * The company's feed read through the proxy, checked against what was sent: every sent visit is there once, each
   * person's visits name one customer, nobody else's, with exactly one first visit; footfall names nobody.
   */
  async function expectOneCustomerPerPerson(company: Company, sent: Sent): Promise<void> {
    const r = await api.request('GET', '/api/visits?limit=1000', { token: company.ownerToken });
    expect(r.status).toBe(200);
    const rows: { visit_id: string; visitor_id?: string; is_new_visitor: boolean }[] = r.body.arrivals;
    expect(rows.map((v) => v.visit_id).sort()).toEqual([...sent.keys()].sort());
    const customerOf = new Map<number, Set<string>>();
    const firstVisits = new Map<string, number>();
    for (const v of rows) {
      const person = sent.get(v.visit_id);
      if (person === undefined) {
        expect(v.visitor_id).toBeUndefined();
        continue;
      }
      expect(v.visitor_id, `visit ${v.visit_id} of person ${person}`).toBeDefined();
      customerOf.set(person, (customerOf.get(person) ?? new Set()).add(v.visitor_id!));
      if (v.is_new_visitor) firstVisits.set(v.visitor_id!, (firstVisits.get(v.visitor_id!) ?? 0) + 1);
    }
    const people = [...customerOf.keys()];
    expect(people.filter((p) => customerOf.get(p)!.size !== 1), 'people with more than one customer').toEqual([]);
    const ids = people.map((p) => [...customerOf.get(p)!][0]!);
    expect(new Set(ids).size, 'different people on one customer').toBe(people.length);
    expect(ids.filter((id) => firstVisits.get(id) !== 1), 'customers without exactly one first visit').toEqual([]);
    expect(await customers(company.id)).toBe(people.length);
  }

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-scale-out-'));
    cluster = await startPostgres({ maxConnections: 100 });
    mq = await startMosquitto();
    const databaseUrl = await cluster.createDatabase();
    const dataDir = path.join(tmp, 'data');
    fs.mkdirSync(dataDir, { mode: 0o700 }); // as the installer makes it
    const shared = sharedSettings({
      databaseUrl,
      broker: { url: mq.url, ...mq.admin },
      dataDir,
      encryptionKey: randomBytes(32).toString('base64'),
      admin: ADMIN,
      metricsToken: randomBytes(24).toString('hex'),
      // Every message of these tests is a visit of its own (sightings one second apart do not join); customer photos on.
      extra: { FOOTFALL_VISIT_GAP_S: '0', FOOTFALL_IMAGES: 'local' },
    });
    // Process B has a data folder of its own, as on another machine (docs/scale-out.md, "Files on each app machine"):
    // nothing but the embedded identity provider's key file is copied into it, as the docs say to.
    const dataDirB = path.join(tmp, 'data-b');
    fs.mkdirSync(dataDirB, { mode: 0o700 });
    hoA = await headOfficeProcess('head-office-a', shared, { clientId: 'head-office-a', logDir: tmp });
    hoB = await headOfficeProcess('head-office-b', { ...shared, FOOTFALL_DATA_DIR: dataDirB }, { clientId: 'head-office-b', logDir: tmp });
    await hoA.start();
    fs.copyFileSync(path.join(dataDir, 'idp-keys.json'), path.join(dataDirB, 'idp-keys.json'));
    await hoB.start();
    proxy = await startRoundRobinProxy([hoA.url, hoB.url]);
    api = headOfficeApi(proxy.url, ADMIN);
    reach = { ...api, server: { mqttPort: mq.port } };
    direct = [headOfficeApi(hoA.url, ADMIN), headOfficeApi(hoB.url, ADMIN)];
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  }, 180_000);

  afterAll(async () => {
    await Promise.all(pcs.map((p) => p.close()));
    await proxy?.close();
    await Promise.all([hoA?.stop(), hoB?.stop()]);
    await db?.end().catch(() => undefined);
    await mq?.close();
    await cluster?.close();
    if (tmp && failed) console.error(`${FILE}: the head-office processes' logs are kept in ${tmp}`);
    else if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => {
      failed = true;
      for (const p of [hoA, hoB]) if (p) console.error(`--- ${p.name} (${p.logFile}), last lines:\n${p.logTail(20)}`);
    });
  });

  it('a: the console’s calls go through the proxy to both processes: company, shops, users, visits', async () => {
    const company = await api.company('Proxy Co');
    const owner = company.ownerToken;
    for (const name of ['North', 'South', 'East']) {
      const made = await api.request('POST', '/api/sites', { token: owner, body: { name } });
      expect(made.status).toBe(201);
      // The next call goes to the other process: it sees the shop at once (one database, no cache between).
      const listed = await api.request('GET', '/api/sites', { token: owner });
      expect(listed.body.map((s: any) => s.site_id)).toContain(made.body.site_id);
    }
    const member = await api.request('POST', '/api/team/members', { token: owner, body: { email: 'manager@proxy.test', full_name: 'Mia Manager', role: 'manager', password: 'member-password-1' } });
    expect(member.status).toBe(201);
    const signedIn = await api.login('manager@proxy.test', 'member-password-1');
    for (let i = 0; i < 2; i++) {
      const me = await api.request('GET', '/api/auth/me', { token: signedIn.access_token });
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ email: 'manager@proxy.test', role: 'manager' });
    }
    const feed = await api.request('GET', '/api/visits', { token: owner });
    expect(feed.status).toBe(200);
    expect(feed.body.arrivals).toEqual([]);
    // Both processes answered, each about half (round robin), none refused.
    expect(proxy.answered[0]).toBeGreaterThan(3);
    expect(proxy.answered[1]).toBeGreaterThan(3);
    expect(proxy.refused).toEqual([0, 0]);
  });

  it('b: shop PCs publish visits of returning and new people: each stored once, one customer per person, both processes ingesting', async () => {
    const company = await api.company('Ingest Co');
    const shops = await shopPcs(company, ['Ingest 1', 'Ingest 2', 'Ingest 3', 'Ingest 4']);
    const sent: Sent = new Map();
    // People seen before: enrolled first, by whichever process took each.
    const known = Array.from({ length: 8 }, () => nextPerson++);
    await Promise.all(known.map((p, i) => shops[i % shops.length]!.publish(visit(sent, p))));
    await storedExactly(company.id, known.length);

    const before = await received();
    // Returning people (any process may take them: it must know the customer the other made), new people, footfall.
    const plan = shops.map((_, s) => Array.from({ length: 12 }, (_, i) => visit(sent, i % 3 === 0 ? known[(s * 3 + i) % known.length] : i % 3 === 1 ? nextPerson++ : undefined)));
    await Promise.all(
      shops.map(async (pc, s) => {
        for (const v of plan[s]!) await pc.publish(v);
      }),
    );
    // Two visits sent again (a shop PC that missed the PUBACK): stored once.
    await shops[0]!.publish(plan[0]![1]!);
    await shops[1]!.publish(plan[1]![1]!);
    const published = plan.flat().length + 2;
    await storedExactly(company.id, sent.size);
    await expectOneCustomerPerPerson(company, sent);

    // A shared subscription: each message went to one process (none to both), and both took some.
    const after = await received();
    const took = after.map((n, i) => n - before[i]!);
    expect(took[0]! + took[1]!).toBeGreaterThanOrEqual(published);
    for (const n of took) {
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThan(published);
    }
  }, 90_000);

  it('c: an arrival stream opened on either process gets every arrival once, whichever process ingested it; also through the proxy', async () => {
    const company = await api.company('Stream Co');
    const shops = await shopPcs(company, ['Stream 1', 'Stream 2', 'Stream 3']);
    const streams = await Promise.all([...direct, api].map((h) => openStream(h, company.ownerToken)));
    try {
      for (const s of streams) expect(s.res.status).toBe(200);
      const storedBefore = await stored();
      const sent: Sent = new Map();
      const known = Array.from({ length: 4 }, () => nextPerson++);
      await Promise.all(
        shops.map(async (pc, s) => {
          for (let i = 0; i < 10; i++) await pc.publish(visit(sent, i % 2 === 0 ? known[(s + i) % known.length] : i % 4 === 1 ? nextPerson++ : undefined));
        }),
      );
      await storedExactly(company.id, sent.size);
      const ids = (s: (typeof streams)[number]) => s.reader.events.filter((e) => e.event === 'arrival').map((e) => JSON.parse(e.data).visit_id as string);
      for (const [i, s] of streams.entries()) {
        await waitFor(() => new Set(ids(s)).size >= sent.size, STORED_MS, 50).catch(() => undefined);
        const got = ids(s);
        expect(got.filter((id) => !sent.has(id)), `stream ${i}: arrivals not sent`).toEqual([]);
        expect([...sent.keys()].filter((id) => !got.includes(id)), `stream ${i}: arrivals missing`).toEqual([]);
        expect(got.length, `stream ${i}: arrivals sent twice`).toBe(sent.size);
      }
      // Both processes stored some of them, so each direct stream had arrivals the other process ingested.
      const storedNow = await stored();
      expect(storedNow[0]! - storedBefore[0]!).toBeGreaterThan(0);
      expect(storedNow[1]! - storedBefore[1]!).toBeGreaterThan(0);
      await expectOneCustomerPerPerson(company, sent);
    } finally {
      await Promise.all(streams.map((s) => s.close()));
    }
  }, 90_000);

  it('d: the same new person at two shops at the same moment, ten times over: one customer per person', async () => {
    const company = await api.company('Twins Co');
    const [x, y] = await shopPcs(company, ['Twin X', 'Twin Y']);
    const sent: Sent = new Map();
    for (let i = 0; i < 10; i++) {
      const person = nextPerson++;
      const at = nextTime();
      await Promise.all([x!.publish(visit(sent, person, at)), y!.publish(visit(sent, person, at))]);
    }
    await storedExactly(company.id, 20);
    await expectOneCustomerPerPerson(company, sent);
    expect(await customers(company.id)).toBe(10);
  }, 60_000);

  it('e: a session revoked through one process is refused by the other; wrong passwords to both lock the account after as many as on one', async () => {
    const company = await api.company('Sessions Co');
    const owner = company.ownerToken;
    for (const email of ['revoke@sessions.test', 'one@sessions.test', 'both@sessions.test']) {
      const r = await api.request('POST', '/api/team/members', { token: owner, body: { email, full_name: email, role: 'staff', password: 'member-password-1' } });
      expect(r.status).toBe(201);
    }
    const [onA, onB] = direct;
    // Sign-out through A: B refuses the access token and its refresh token.
    const first = await onA.login('revoke@sessions.test', 'member-password-1', 'Phone');
    expect((await onB.request('GET', '/api/auth/me', { token: first.access_token })).status).toBe(200);
    expect((await onA.request('POST', '/api/auth/logout', { token: first.access_token })).status).toBe(204);
    expect((await onB.request('GET', '/api/auth/me', { token: first.access_token })).status).toBe(401);
    expect((await onB.request('GET', '/api/sites', { token: first.access_token })).status).toBe(401);
    expect((await onB.request('POST', '/api/auth/refresh', { body: { refresh_token: first.refresh_token } })).status).toBe(401);
    // A session ended from another device through B: A refuses it.
    const phone = await onA.login('revoke@sessions.test', 'member-password-1', 'Phone');
    const laptop = await onB.login('revoke@sessions.test', 'member-password-1', 'Laptop');
    expect((await onA.request('GET', '/api/auth/me', { token: phone.access_token })).status).toBe(200);
    const listed = await onB.request('GET', '/api/auth/sessions', { token: laptop.access_token });
    const phoneSession = listed.body.find((s: any) => s.device === 'Phone' && !s.current);
    expect(phoneSession).toBeDefined();
    expect((await onB.request('DELETE', `/api/auth/sessions/${phoneSession.id}`, { token: laptop.access_token })).status).toBe(204);
    expect((await onA.request('GET', '/api/auth/me', { token: phone.access_token })).status).toBe(401);
    expect((await onA.request('GET', '/api/auth/me', { token: laptop.access_token })).status).toBe(200);

    /** Wrong passwords, the n-th to `to(n)`, until one is refused with 429: how many were refused with 401 first. */
    const failuresBeforeLock = async (email: string, to: (n: number) => HeadOfficeApi): Promise<number> => {
      for (let n = 0; n < 30; n++) {
        const r = await to(n).request('POST', '/api/auth/login', { body: { email, password: 'wrong-password' } });
        if (r.status === 429) return n;
        expect(r.status).toBe(401);
      }
      throw new Error(`${email}: never locked`);
    };
    const onOne = await failuresBeforeLock('one@sessions.test', () => onA);
    const alternating = await failuresBeforeLock('both@sessions.test', (n) => direct[n % 2]!);
    expect(onOne).toBe(10); // FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT's default
    expect(alternating).toBe(onOne);
    // Locked on both, the right password too.
    for (const h of direct) expect((await h.request('POST', '/api/auth/login', { body: { email: 'both@sessions.test', password: 'member-password-1' } })).status).toBe(429);
  }, 60_000);

  it('f: kill -9 of one process while shop PCs publish: the proxy answers through the other; once it is back, nothing lost, nothing twice', async () => {
    const company = await api.company('Crash Co');
    const shops = await shopPcs(company, ['Crash 1', 'Crash 2', 'Crash 3']);
    const sent: Sent = new Map();
    const known = Array.from({ length: 6 }, () => nextPerson++);
    await Promise.all(known.map((p, i) => shops[i % shops.length]!.publish(visit(sent, p))));
    await storedExactly(company.id, known.length);

    const publishRound = (n: number) =>
      Promise.all(
        shops.map(async (pc, s) => {
          for (let i = 0; i < n; i++) await pc.publish(visit(sent, i % 3 === 0 ? known[(s + i) % known.length] : i % 3 === 1 ? nextPerson++ : undefined));
        }),
      );
    // B is killed while the first round is being ingested (a third of it stored): what it had in flight is not acknowledged.
    const firstRound = publishRound(12);
    await waitFor(async () => (await sightings(company.id)) >= known.length + 12, STORED_MS, 20);
    await hoB.kill('SIGKILL');
    const atKill = await sightings(company.id);
    await firstRound;
    // The second round is sent while B is down.
    await publishRound(12);

    // The console goes on through the proxy, whose turn for B is refused and passed to A.
    const refusedBefore = proxy.refused[1]!;
    for (let i = 0; i < 6; i++) {
      const r = await api.request('GET', i % 2 ? '/api/sites' : '/api/visits?limit=5', { token: company.ownerToken });
      expect(r.status).toBe(200);
    }
    expect(proxy.refused[1]!).toBeGreaterThan(refusedBefore);
    // A goes on storing what comes to it (some of the second round at least).
    await waitFor(async () => (await sightings(company.id)) > atKill, STORED_MS, 50);

    await hoB.start();
    await storedExactly(company.id, sent.size);
    await expectOneCustomerPerPerson(company, sent);
    // B's session held what was in flight to it at the kill and its turns of the second round (Mosquitto 2 gives an
    // offline member of a shared subscription its turn too, queued in its persistent session): B got them when back.
    // Before ingest acknowledged only committed batches, 13 to 17 of the 78 visits were lost here.
    expect(metric(await hoB.metrics(), 'footfall_ingest_received_total')).toBeGreaterThan(0);
    expect((await api.request('GET', '/api/sites', { token: company.ownerToken })).status).toBe(200);
  }, 120_000);

  it('g: processes on two machines: a photo and a camera picture sent to one are served by the other; an erasure through either takes the photo from both', async () => {
    const company = await api.company('Pictures Co');
    const owner = company.ownerToken;
    const [pc] = await shopPcs(company, ['Pictures 1']);
    const camera = await addCamera(api as never, owner, pc!.shop.slug, { camera_id: 'door', label: 'Door' });
    const bytesFrom = async (url: string, p: string) => {
      const res = await fetch(url + p, { headers: { Authorization: `Bearer ${owner}` } });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };
    // Both reach process A only (its data folder is not B's).
    const face = await jpeg(112, 112, 77);
    const up = await upload({ ...reach, url: hoA.url }, 'POST', '/api/agent/faces', pc!.enrolment.token, face);
    expect(up.status).toBe(201);
    const picture = await jpeg(160, 90, 140);
    expect((await upload({ ...reach, url: hoA.url }, 'PUT', '/api/agent/cameras/door/snapshot', pc!.enrolment.token, picture)).status).toBe(200);
    const sent: Sent = new Map();
    await pc!.publish({ ...visit(sent, nextPerson++), face_image_id: up.body.face_image_id });
    await storedExactly(company.id, 1);
    const arrival = (await api.request('GET', '/api/visits', { token: owner })).body.arrivals[0];
    expect(arrival.visitor_id).toBeDefined();
    for (const ho of [hoA, hoB]) {
      const photo = await bytesFrom(ho.url, `/api/faces/${up.body.face_image_id}`);
      expect(photo.status, ho.name).toBe(200);
      expect(photo.body.equals(face), ho.name).toBe(true);
      const snap = await bytesFrom(ho.url, `/api/cameras/${camera.id}/snapshot.jpg`);
      expect(snap.status, ho.name).toBe(200);
      expect(snap.body.equals(picture), ho.name).toBe(true);
    }
    // Neither data folder holds a picture: they are rows of the database.
    for (const dir of [hoA.settings.FOOTFALL_DATA_DIR!, hoB.settings.FOOTFALL_DATA_DIR!]) {
      expect(fs.existsSync(path.join(dir, 'images')) || fs.existsSync(path.join(dir, 'snapshots')), dir).toBe(false);
    }
    const erased = await direct[1].request('DELETE', `/api/visitors/${arrival.visitor_id}`, { token: owner });
    expect(erased.status).toBe(200);
    expect(erased.body.images_deleted).toBe(1);
    for (const ho of [hoA, hoB]) expect((await bytesFrom(ho.url, `/api/faces/${up.body.face_image_id}`)).status, ho.name).toBe(404);
    expect(await rowCount('select count(*) as n from face_image_bytes b join face_images f on f.id = b.face_image_id where f.company_id = $1', company.id)).toBe(0);
    expect(await rowCount('select count(*) as n from face_images where company_id = $1', company.id)).toBe(0);
    // A removed camera's picture goes.
    expect((await api.request('DELETE', `/api/cameras/${camera.id}`, { token: owner })).status).toBe(200);
    expect(Number((await db.query<{ n: string }>('select count(*) as n from camera_pictures where camera_id = $1', [camera.id])).rows[0]!.n)).toBe(0);
  });
  it('h: live view across processes: a viewer on one process gets the frames a shop PC uploads to the other, and the uploads stop when it leaves', async () => {
    const company = await api.company('Live Co');
    const owner = company.ownerToken;
    const [pc] = await shopPcs(company, ['Live 1']);
    const camera = await addCamera(api as never, owner, pc!.shop.slug, { camera_id: 'door', label: 'Door' });
    const agentOnB = { ...reach, url: hoB.url };
    const demandsOnB = async () => (await (await fetch(`${hoB.url}/api/agent/live`, { headers: { Authorization: `Bearer ${pc!.enrolment.token}` } })).json()) as { cameras: { camera: string }[] };
    expect((await demandsOnB()).cameras).toEqual([]);
    // The viewer's stream is held by process A.
    const abort = new AbortController();
    const res = await fetch(`${hoA.url}/api/cameras/${camera.id}/live`, { headers: { Authorization: `Bearer ${owner}` }, signal: abort.signal });
    expect(res.status).toBe(200);
    const events: SseEvent[] = [];
    const pump = pumpSse(res, (e) => {
      if (e.event !== 'comment') events.push(e);
    });
    await waitFor(() => events.some((e) => e.event === 'waiting'), 10_000);
    // Process B heard A's demand: a shop PC polling B is told to send, as one polling A would be.
    await waitFor(async () => (await demandsOnB()).cameras.some((c) => c.camera === camera.id), 10_000, 50);
    // The shop PC's uploads reach process B (as a round-robin proxy may send them): each is handed on to A's viewer.
    const frames = await Promise.all([1, 2, 3].map((n) => jpeg(320, 180, n * 60)));
    for (const f of frames) {
      const r = await upload(agentOnB, 'POST', '/api/agent/live/door/frames', pc!.enrolment.token, f);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ watching: true, until: expect.any(String) });
    }
    const shown = () => events.filter((e) => e.event === 'frame').map((e) => e.data);
    await waitFor(() => shown().length === 3, 10_000);
    expect(shown()).toEqual(frames.map((f) => f.toString('base64')));
    // The viewer leaves: B answers the uploads "nobody watches" within seconds, and lists no demand.
    abort.abort();
    await pump;
    const leftAt = Date.now();
    await waitFor(async () => (await upload(agentOnB, 'POST', '/api/agent/live/door/frames', pc!.enrolment.token, frames[0]!)).body.watching === false, 10_000, 100);
    expect(Date.now() - leftAt).toBeLessThan(5000);
    expect((await demandsOnB()).cameras).toEqual([]);
  });
});
