import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { and, eq, sql } from 'drizzle-orm';
import { pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { buildApp } from '../app.js';
import { tenantOf, type AppRouter } from '../context.js';
import type { Db } from '../db/open.js';
import { onPostgres, run } from '../db/raw.js';
import { auth } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { queryOf, validate } from '../http/pipeline.js';
import { rule } from '../policy.js';
import { personRef } from './people.js';
import { isUuid, lookup, resolve, type Place, type RefKind } from './resolver.js';
import { one } from '../db/query.js';

/**
 * A throwaway table in the test's real database (either store): per-tenant things whose `code` need not be unique.
 * The dialect's table, typed as SQLite's, as server/db/tables.ts does.
 */
const sqliteWidgets = sqliteTable('test_widgets', { id: text('id').primaryKey(), companyId: text('company_id').notNull(), code: text('code').notNull() });
const pgWidgets = pgTable('test_widgets', { id: pgText('id').primaryKey(), companyId: pgText('company_id').notNull(), code: pgText('code').notNull() });
const widgets = onPostgres ? (pgWidgets as unknown as typeof sqliteWidgets) : sqliteWidgets;

const widgetRef: RefKind = {
  noun: 'widget',
  byId: async (db, tenantId, id) => (await one(db.select({ id: widgets.id }).from(widgets).where(and(eq(widgets.id, id), eq(widgets.companyId, tenantId)))))?.id,
  byRef: async (db, tenantId, ref) =>
    (await db
      .select({ id: widgets.id })
      .from(widgets)
      .where(and(eq(widgets.code, ref), eq(widgets.companyId, tenantId))))
      .map((r) => r.id),
};

async function failure(db: Db, kind: RefKind, tenant: string, value: string, place: Place): Promise<HttpError> {
  try {
    await resolve(db, kind, tenant, value, place);
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error(`"${value}" resolved`);
}

describe('reference resolver', () => {
  let h: Harness;
  let db: Db;
  let a: Company;
  let b: Company;
  const ids = { twinA1: randomUUID(), twinA2: randomUUID(), soloA: randomUUID(), twinB: randomUUID(), uuidCoded: randomUUID() };
  const uuidShapedCode = randomUUID();

  beforeAll(async () => {
    h = await startHarness();
    db = h.server.store.db;
    a = await h.company('Ref Alpha');
    b = await h.company('Ref Beta');
    await run(db, sql`create table test_widgets (id text primary key, company_id text not null, code text not null)`);
    await db.insert(widgets)
      .values([
        { id: ids.twinA1, companyId: a.id, code: 'cam-1' },
        { id: ids.twinA2, companyId: a.id, code: 'cam-1' },
        { id: ids.soloA, companyId: a.id, code: 'cam-2' },
        { id: ids.twinB, companyId: b.id, code: 'cam-1' },
        { id: ids.uuidCoded, companyId: a.id, code: uuidShapedCode },
      ]);
  });
  afterAll(() => h.close());

  it('isUuid accepts uuids in any case and nothing else', () => {
    const id = randomUUID();
    expect(isUuid(id)).toBe(true);
    expect(isUuid(id.toUpperCase())).toBe(true);
    for (const v of ['', 'cam-1', id.slice(1), `${id}x`, id.replace(/-/g, ''), `{${id}}`]) expect(isUuid(v), v).toBe(false);
  });

  it('a uuid resolves, in any case and with spaces around it', async () => {
    const owner = a.owner.user.id;
    expect(await resolve(db, personRef, a.id, owner, 'path')).toBe(owner);
    expect(await resolve(db, personRef, a.id, owner.toUpperCase(), 'query')).toBe(owner);
    expect(await resolve(db, personRef, a.id, ` ${owner} `, 'path')).toBe(owner);
  });

  it('a reference resolves: a person by email, case-insensitively', async () => {
    const owner = a.owner.user.id;
    expect(await resolve(db, personRef, a.id, a.ownerEmail, 'path')).toBe(owner);
    expect(await resolve(db, personRef, a.id, a.ownerEmail.toUpperCase(), 'path')).toBe(owner);
    expect(await resolve(db, personRef, a.id, `  ${a.ownerEmail}\t`, 'query')).toBe(owner);
    expect(await resolve(db, widgetRef, a.id, 'cam-2', 'path')).toBe(ids.soloA);
  });

  it("another tenant's uuid and email resolve to nothing", async () => {
    for (const value of [b.owner.user.id, b.ownerEmail, b.ownerEmail.toUpperCase()]) {
      expect(await lookup(db, personRef, a.id, value)).toEqual({ id: undefined, why: 'unknown' });
    }
    expect(await lookup(db, widgetRef, a.id, ids.twinB)).toEqual({ id: undefined, why: 'unknown' });
    expect(await lookup(db, widgetRef, b.id, ids.soloA)).toEqual({ id: undefined, why: 'unknown' });
    // The platform admin belongs to no tenant.
    expect(await lookup(db, personRef, a.id, h.admin.email)).toEqual({ id: undefined, why: 'unknown' });
  });

  it('unknown: 404 not_found in a path, 400 invalid_request in a query', async () => {
    for (const value of ['nobody@nowhere.test', randomUUID(), b.ownerEmail, b.owner.user.id, '', '   ']) {
      const inPath = await failure(db, personRef, a.id, value, 'path');
      expect(inPath.status, value).toBe(404);
      expect(inPath.code).toBe('not_found');
      const inQuery = await failure(db, personRef, a.id, value, 'query');
      expect(inQuery.status, value).toBe(400);
      expect(inQuery.code).toBe('invalid_request');
    }
    expect((await failure(db, personRef, a.id, 'nobody@nowhere.test', 'path')).message).toBe('Person "nobody@nowhere.test" was not found.');
    expect((await failure(db, personRef, a.id, 'nobody@nowhere.test', 'query')).message).toBe('There is no person "nobody@nowhere.test" in your company.');
  });

  it('a reference matching more than one row resolves to nothing: 404 in a path, 400 in a query', async () => {
    expect(await lookup(db, widgetRef, a.id, 'cam-1')).toEqual({ id: undefined, why: 'ambiguous' });
    const inPath = await failure(db, widgetRef, a.id, 'cam-1', 'path');
    expect([inPath.status, inPath.code]).toEqual([404, 'not_found']);
    expect(inPath.message).toBe('"cam-1" names more than one widget; use its id.');
    const inQuery = await failure(db, widgetRef, a.id, 'cam-1', 'query');
    expect([inQuery.status, inQuery.code]).toEqual([400, 'invalid_request']);
    expect(inQuery.message).toMatch(/names more than one widget/);
    // The uuid always works; in the other tenant the same reference is unique.
    expect(await resolve(db, widgetRef, a.id, ids.twinA1, 'path')).toBe(ids.twinA1);
    expect(await resolve(db, widgetRef, a.id, ids.twinA2, 'query')).toBe(ids.twinA2);
    expect(await resolve(db, widgetRef, b.id, 'cam-1', 'path')).toBe(ids.twinB);
  });

  it('the same row named twice by a kind is not ambiguous', async () => {
    const doubled: RefKind = { ...widgetRef, byRef: async (d, t, r) => [...await widgetRef.byRef(d, t, r), ...await widgetRef.byRef(d, t, r)] };
    expect(await resolve(db, doubled, a.id, 'cam-2', 'path')).toBe(ids.soloA);
  });

  it('a uuid that is no id of the tenant is still tried as a reference', async () => {
    expect(await resolve(db, widgetRef, a.id, uuidShapedCode, 'path')).toBe(ids.uuidCoded);
    expect(await lookup(db, widgetRef, b.id, uuidShapedCode)).toEqual({ id: undefined, why: 'unknown' });
  });

  it('over HTTP: the envelope, 404 in a path and 400 in a query, scoped to the session tenant', async () => {
    const Query = z.object({ person: z.string() });
    const extra: AppRouter = new Router({ prefix: '/test-only' });
    extra.get('/people/:ref', auth(rule('staff', 'look people up')), async (ctx) => {
      ctx.body = { id: await resolve(ctx.deps.store.db, personRef, tenantOf(ctx), ctx.params.ref!, 'path') };
    });
    extra.get('/search', auth(rule('staff', 'search')), validate({ query: Query }), async (ctx) => {
      ctx.body = { id: await resolve(ctx.deps.store.db, personRef, tenantOf(ctx), queryOf(ctx, Query).person, 'query') };
    });
    const app = buildApp(h.server.deps);
    app.use(extra.routes());
    const server = http.createServer(app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (p: string, token: string) => {
      const res = await fetch(base + p, { headers: { Authorization: `Bearer ${token}` } });
      return { status: res.status, body: await res.json() };
    };
    try {
      expect(await get(`/test-only/people/${encodeURIComponent(a.ownerEmail.toUpperCase())}`, a.ownerToken)).toEqual({ status: 200, body: { id: a.owner.user.id } });
      expect(await get(`/test-only/search?person=${encodeURIComponent(a.owner.user.id)}`, a.ownerToken)).toEqual({ status: 200, body: { id: a.owner.user.id } });
      // The same references from B's session: B's own owner, never A's.
      expect((await get(`/test-only/people/${encodeURIComponent(b.ownerEmail)}`, b.ownerToken)).body).toEqual({ id: b.owner.user.id });
      const path404 = await get(`/test-only/people/${encodeURIComponent(a.ownerEmail)}`, b.ownerToken);
      expect(path404).toEqual({ status: 404, body: { error: 'not_found', message: expect.stringContaining(a.ownerEmail) } });
      const query400 = await get(`/test-only/search?person=${encodeURIComponent(a.owner.user.id)}`, b.ownerToken);
      expect(query400).toEqual({ status: 400, body: { error: 'invalid_request', message: expect.stringContaining(a.owner.user.id) } });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
