import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawConfig } from '../server/config.js';
import { Faces } from '../server/identity/synthetic.js';
import { feedCursors } from '../server/visits/cursor.js';
import { encodeEmbedding } from '../shared/messages.js';
import { startHarness, type Harness } from './support/harness.js';
import { startIdp, type StandIn } from './support/idp.js';
import { addCamera, jpeg, memberToken, openShop, waitFor } from './support/shop-pc.js';
import { settled, shopPc, type ShopPc } from './support/visits.js';

/**
 * Malformed requests against every route of the two specs (head-office-api.md under /api, auth-service-v2.md under
 * /auth): wrong JSON types for each body field, missing and unknown fields, huge numbers, long and odd strings, bad
 * path references, bad query parameters, bodies that are not a JSON object, wrong content types, and every kind of
 * wrong caller. Whatever is sent, head office must answer without a 500 (only the 501/502/503 codes the spec and
 * docs name for unconfigured or failing dependencies are allowed), and every error must be JSON in the envelope of
 * its path with a message a person can read. The cases are a fixed table: no randomness.
 */

// ---- What is sent ---------------------------------------------------------------------------------------------

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Caller = 'none' | 'owner' | 'manager' | 'staff' | 'admin' | 'agent' | 'idToken' | 'idToken2' | 'staffIdToken' | 'self' | 'logout';

interface Route {
  method: Method;
  /** Path template; `:name` is filled from `params`. */
  path: string;
  /** Who may call it (the token used for the body, query and path cases). */
  caller: Caller;
  params?: () => Record<string, string>;
  /** A well-formed body: every field of it is mutated in turn. */
  body?: () => Record<string, unknown>;
  /** A well-formed query. */
  query?: () => Record<string, string>;
  /** More values to try per query parameter, beyond the generic ones. */
  queryValues?: Record<string, string[]>;
  /** Whole queries to try as they are. */
  queries?: () => string[];
  /** More header sets to try with the right caller. */
  headers?: () => [string, Record<string, string>][];
  /** The body is an image/jpeg upload. */
  jpeg?: number;
  /** Valid tokens that this route would sign out are not used on it: only bad tokens and its own caller. */
  endsSessions?: boolean;
}

interface Case {
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

interface Answer {
  status: number;
  type: string;
  text: string;
  json?: unknown;
}

/** A JSON text spliced into a body as it is (numbers JSON.stringify cannot write). */
class RawJson {
  constructor(readonly text: string) {}
}

function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof RawJson ? `@@RAW:${v.text}@@` : v)).replace(/"@@RAW:(.*?)@@"/g, '$1');
}

function deep(levels: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

const LONG = 'x'.repeat(10_000);

/** Replaces a field's value: wrong types, extreme numbers, odd strings. */
const badValues: [string, unknown][] = [
  ['a number', 12345],
  ['-1', -1],
  ['0', 0],
  ['1.5', 1.5],
  ['1e308', 1e308],
  ['2**53+1', 2 ** 53 + 1],
  ['1e400 (Infinity when parsed)', new RawJson('1e400')],
  ['-0', new RawJson('-0')],
  ['a 30-digit integer', new RawJson('123456789012345678901234567890')],
  ['"NaN"', 'NaN'],
  ['"Infinity"', 'Infinity'],
  ['"42"', '42'],
  ['""', ''],
  ['blank', '   '],
  ['10k characters', LONG],
  ['NUL inside', 'a\u0000b'],
  ['control characters', '\u0001\u0007\u001b[31m\u007f\u009b'],
  ['unicode', 'Zoë 😀 \u202e مرحبا 名前'],
  ['a lone surrogate', '\ud800x'],
  ['SQL', "' OR 1=1; --"],
  ['a path', '../../etc/passwd'],
  ['null', null],
  ['true', true],
  ['false', false],
  ['[]', []],
  ['an array', ['a', 1, null]],
  ['{}', {}],
  ['an object', { a: 1, b: [1] }],
  ['a 200-deep object', deep(200)],
];

/** Whole bodies that are not the JSON object a route expects. */
function bodyShapes(valid: string): [string, string | Buffer, Record<string, string>][] {
  const json = { 'Content-Type': 'application/json' };
  const inner = valid === '{}' ? '' : `,${valid.slice(1, -1)}`;
  return [
    ['malformed JSON "{"', '{', json],
    ['truncated JSON', valid.slice(0, Math.max(1, valid.length - 3)), json],
    ['single-quoted JSON', "{'a': 1}", json],
    ['trailing comma', '{"a":1,}', json],
    ['NaN literal', '{"a":NaN}', json],
    ['a JSON array', '[]', json],
    ['the valid body inside an array', `[${valid}]`, json],
    ['a JSON string', '"hello"', json],
    ['a JSON number', '42', json],
    ['JSON null', 'null', json],
    ['JSON true', 'true', json],
    ['an empty body', '', json],
    ['a blank body', ' \n\t ', json],
    ['a byte-order mark first', `\ufeff${valid}`, json],
    ['__proto__ and constructor keys', `{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}${inner}}`, json],
    ['duplicate keys', `{"a":1,"a":[2]${inner}}`, json],
    ['a 5000-deep array', '['.repeat(5000) + ']'.repeat(5000), json],
    ['a 3000-deep object', '{"a":'.repeat(3000) + '1' + '}'.repeat(3000), json],
    ['invalid UTF-8', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]), json],
    ['valid JSON sent as text/plain', valid, { 'Content-Type': 'text/plain' }],
    ['a form body', 'a=1&b=2', { 'Content-Type': 'application/x-www-form-urlencoded' }],
    ['a multipart body', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n', { 'Content-Type': 'multipart/form-data; boundary=x' }],
    ['JSON labelled utf-16', valid, { 'Content-Type': 'application/json; charset=utf-16' }],
    ['JSON with an unknown charset', valid, { 'Content-Type': 'application/json; charset=klingon' }],
    ['a vendor JSON type', valid, { 'Content-Type': 'application/vnd.api+json' }],
    ['Content-Encoding gzip on a plain body', valid, { ...json, 'Content-Encoding': 'gzip' }],
    ['an unknown Content-Encoding', valid, { ...json, 'Content-Encoding': 'br2' }],
    ['a body over the size limit', `{"a":"${'x'.repeat(1_100_000)}"}`, json],
  ];
}

/** Replaces a query parameter's value (already URL-encoded). */
const badQueryValues: [string, string][] = [
  ['empty', ''],
  ['blank', '%20%20'],
  ['a word', 'abc'],
  ['-1', '-1'],
  ['0', '0'],
  ['1.5', '1.5'],
  ['1e308', '1e308'],
  ['20 digits', '99999999999999999999'],
  ['NaN', 'NaN'],
  ['Infinity', 'Infinity'],
  ['hex', '0x10'],
  ['NUL', '%00'],
  ['a bad escape', '%ZZ'],
  ['broken UTF-8', '%E0%A4%A'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['control characters', '%01%1B%7F'],
  ['10k characters', 'x'.repeat(10_000)],
  ['emoji and RTL override', '%F0%9F%98%80%E2%80%AE'],
  ['SQL', encodeURIComponent("' OR 1=1; --")],
  ['a path', '..%2F..%2Fetc%2Fpasswd'],
];

/** Replaces a path reference (as it appears in the URL). */
const badRefs: [string, string][] = [
  ['an unknown uuid', '00000000-0000-4000-8000-000000000000'],
  ['an unknown upper-case uuid', 'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF'],
  ['V-99999999999999999999', 'V-99999999999999999999'],
  ['V-9007199254740993', 'V-9007199254740993'],
  ['V-0', 'V-0'],
  ['-1', '-1'],
  ['20 digits', '99999999999999999999'],
  ['1e308', '1e308'],
  ['NaN', 'NaN'],
  ['NUL', '%00'],
  ['NUL after a reference', 'V-1%00'],
  ['encoded ../', '..%2F..%2Fetc%2Fpasswd'],
  ['an encoded slash', 'a%2Fb'],
  ['300 characters', 'r'.repeat(300)],
  ['5000 characters', 'r'.repeat(5000)],
  ['20k characters (over the 16 KiB header limit)', 'r'.repeat(20_000)],
  ['a bad escape', '%ZZ'],
  ['a lone %', '%'],
  ['broken UTF-8', '%E0%A4%A'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['a space', '%20'],
  ['emoji and RTL override', '%F0%9F%98%80%E2%80%AE'],
  ['markup', '%3Cscript%3E'],
  ['SQL', encodeURIComponent("' OR '1'='1")],
  ['an unknown email', 'nobody%40fuzz.test'],
];

const reportDates = ['9998-12-31', '9999-01-01', '1969-12-31', '2024-02-30', '2023-02-29', '2024-13-01', '2024-00-10', '0000-01-01', '0001-01-01', '9999-12-31', '1970-01-01', '2024-1-1', '20240101', '2024-01-01T00:00:00Z', '%2B002024-01-01', '-000001-01-01'];
const reportZones = ['Mars%2FOlympus', 'UTC', 'utc', 'Etc%2FGMT%2B12', 'Etc%2FGMT-14', 'Pacific%2FKiritimati', '%2B05%3A30', 'GMT%2B5', 'EST5EDT', 'America%2FArgentina%2FComodRivadavia', 'Asia%2FCalcutta', 'localtime', 'Z', 'Asia%2FKolkata%00', '..%2F..%2Fetc%2Fpasswd'];
const reportQueries = (): string[] => {
  const out: string[] = [];
  for (const bucket of ['hour', 'day', 'week', 'month']) {
    for (const [from, to] of [
      ['9999-12-31', '9999-12-31'],
      ['9999-12-01', '9999-12-31'],
      ['0000-01-01', '0000-01-01'],
      ['0000-01-01', '0000-12-31'],
      ['1900-01-01', '2100-01-01'],
      ['1970-01-01', '1970-01-01'],
      ['9998-12-01', '9998-12-31'],
      ['2024-01-10', '2024-01-01'],
    ]) {
      for (const tz of ['Pacific%2FKiritimati', 'Etc%2FGMT%2B12', 'UTC']) out.push(`from=${from}&to=${to}&bucket=${bucket}&tz=${tz}`);
    }
    out.push(`to=9999-12-31&bucket=${bucket}`, `to=9998-12-31&bucket=${bucket}`, `to=1970-01-01&bucket=${bucket}&tz=Etc%2FGMT-14`, `from=0000-01-01&bucket=${bucket}`, `to=0000-01-01&bucket=${bucket}`);
  }
  out.push('from=2024-03-31&to=2024-03-31&bucket=hour&tz=Europe%2FLondon', 'from=2024-10-27&to=2024-10-27&bucket=hour&tz=Europe%2FLondon');
  return out;
};

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
const badCursors = ['garbage', b64('v1:-1'), b64('v1:9007199254740993'), b64('v1:9007199254740991'), b64('v2:1'), b64('v1:1e3'), b64('v1:01'), b64('v1:1\u0000'), 'dj E6MQ', 'y'.repeat(300), '%00'];

// ---- The fixtures the cases point at -----------------------------------------------------------------------------

interface Fixtures {
  owner: string;
  manager: string;
  staff: string;
  admin: string;
  self: string;
  selfRefresh: string;
  logout: string;
  agent: string;
  /** ID tokens of the authentication service: two client accounts and a staff phone sign-in. */
  idToken: string;
  idToken2: string;
  staffIdToken: string;
  victimEmail: string;
  invitationId: string;
  invitationCode: string;
  shopSlug: string;
  shopId: string;
  emptyShopSlug: string;
  entranceId: string;
  tillId: string;
  sideDoorId: string;
  checkId: string;
  faceId: string;
  victim1Slug: string;
  victim1OwnerEmail: string;
  victim2Slug: string;
  smallJpeg: Buffer;
  /** Valid arrivals feed cursors of the fuzzed company (positions 0 and 1). */
  cursor0: string;
  cursor1: string;
}

const f = {} as Fixtures;
const headOf = (token: string) => ({ Authorization: `Bearer ${token}` });
const tokenOf = (c: Caller): string | undefined => (c === 'none' ? undefined : f[c]);

// ---- Every route of the two specs (and of the routers) ------------------------------------------------------------

const profile = () => ({ full_name: 'Anna', phone: '+44 20 7946 0958', email: 'anna@example.com', gender: 'female', date_of_birth: '1990-05-01', notes: 'likes chai', consent: true });
const purchase = () => ({ visitor_id: 'V-1', site_id: f.shopSlug, amount: 180.5, currency: 'INR', items: ['chai'], source: 'till', notes: 'fuzz' });
const reportQuery = () => ({ from: '2024-01-01', to: '2024-01-07', site: f.shopSlug, site_id: f.shopId, tz: 'Asia/Kolkata', bucket: 'day' });
const reportValues = { from: reportDates, to: reportDates, tz: reportZones, bucket: ['year', 'HOUR', 'day%00', 'minute'], site: ['empty-shop-x'] };

const routes: Route[] = [
  // Sign-in and sessions
  { method: 'POST', path: '/api/auth/login', caller: 'none', body: () => ({ email: 'nobody@fuzz.test', password: 'wrong-password', device: 'Fuzz phone' }) },
  { method: 'POST', path: '/api/auth/refresh', caller: 'none', body: () => ({ refresh_token: `ffr_${'A'.repeat(43)}`, device: 'Fuzz phone' }) },
  { method: 'POST', path: '/api/auth/logout', caller: 'logout', endsSessions: true },
  { method: 'GET', path: '/api/auth/me', caller: 'staff' },
  // Own password (extra route, docs/api-conventions.md): the sample's current password is wrong, so no case changes it.
  { method: 'POST', path: '/api/auth/password', caller: 'self', body: () => ({ current_password: 'not-the-password', new_password: 'another-password-1' }) },
  { method: 'GET', path: '/api/auth/sessions', caller: 'self' },
  { method: 'POST', path: '/api/auth/sessions/revoke-others', caller: 'self', endsSessions: true },
  { method: 'DELETE', path: '/api/auth/sessions/:id', caller: 'self', endsSessions: true, params: () => ({ id: '11111111-1111-4111-8111-111111111111' }) },
  { method: 'GET', path: '/api/auth/invitation', caller: 'none', query: () => ({ code: f.invitationCode }) },
  { method: 'POST', path: '/api/auth/register', caller: 'none', body: () => ({ code: f.invitationCode, full_name: 'Redeemed Person', password: 'register-pass-1', device: 'Fuzz phone' }) },
  // Team
  { method: 'GET', path: '/api/team', caller: 'staff' },
  { method: 'POST', path: '/api/team/members', caller: 'owner', body: () => ({ email: 'fuzz-new@fuzz.test', full_name: 'Fuzz New', role: 'staff', password: 'member-password-1', phone: '+14155550100' }) },
  { method: 'POST', path: '/api/team/invitations', caller: 'owner', body: () => ({ email: 'fuzz-invited@fuzz.test', full_name: 'Fuzz Invited', role: 'staff', expires_in_days: 7 }) },
  { method: 'GET', path: '/api/team/invitations', caller: 'manager' },
  { method: 'DELETE', path: '/api/team/invitations/:id', caller: 'manager', params: () => ({ id: f.invitationId }) },
  { method: 'POST', path: '/api/team/:id/password', caller: 'owner', params: () => ({ id: f.victimEmail }), body: () => ({ password: 'victim-password-2' }) },
  { method: 'PATCH', path: '/api/team/:id', caller: 'owner', params: () => ({ id: f.victimEmail }), body: () => ({ role: 'manager', active: true, phone: '+14155550101' }) },
  // Platform administration
  { method: 'GET', path: '/api/admin/clients', caller: 'admin' },
  {
    method: 'POST',
    path: '/api/admin/clients',
    caller: 'admin',
    body: () => ({ company_name: 'Fuzz Made', slug: 'fuzz-made', owner_email: 'fuzz-made-owner@fuzz.test', owner_name: 'Made Owner', password: '' }),
  },
  { method: 'PATCH', path: '/api/admin/clients/:id', caller: 'admin', params: () => ({ id: f.victim1Slug }), body: () => ({ active: true }) },
  { method: 'POST', path: '/api/admin/clients/:id/owner-password', caller: 'admin', params: () => ({ id: f.victim1Slug }), body: () => ({ email: f.victim1OwnerEmail }) },
  { method: 'DELETE', path: '/api/admin/clients/:id', caller: 'admin', params: () => ({ id: f.victim2Slug }), body: () => ({ confirm: 'not-the-slug' }) },
  // Shops
  { method: 'GET', path: '/api/sites', caller: 'staff' },
  { method: 'POST', path: '/api/sites', caller: 'owner', body: () => ({ name: 'Fuzz Opened', slug: 'fuzz-opened', timezone: 'Europe/London' }) },
  { method: 'GET', path: '/api/sites/:site/check', caller: 'staff', params: () => ({ site: f.shopSlug }) },
  { method: 'POST', path: '/api/sites/:site/enrolment-code', caller: 'manager', params: () => ({ site: f.shopSlug }), body: () => ({ label: 'Till 2', days: 3 }) },
  { method: 'DELETE', path: '/api/sites/:site', caller: 'owner', params: () => ({ site: f.emptyShopSlug }) },
  {
    method: 'PATCH',
    path: '/api/sites/:site',
    caller: 'manager',
    params: () => ({ site: f.shopSlug }),
    body: () => ({ region: 'West', occupancy_limit: 40, opening_hours: { mon: [{ open: '09:00', close: '21:00' }] } }),
  },
  // Alerts and scheduled report e-mails (additive)
  { method: 'GET', path: '/api/alerts', caller: 'staff', query: () => ({ state: 'open', limit: '10' }) },
  { method: 'GET', path: '/api/alerts/settings', caller: 'staff' },
  { method: 'PATCH', path: '/api/alerts/settings', caller: 'manager', body: () => ({ email_to: ['ops@fuzz.test'], rules: { camera_down: { after_minutes: 5 } } }) },
  { method: 'GET', path: '/api/reports/subscription', caller: 'staff' },
  { method: 'PUT', path: '/api/reports/subscription', caller: 'staff', body: () => ({ frequency: 'weekly' }) },
  // Cameras
  { method: 'GET', path: '/api/cameras', caller: 'staff' },
  {
    method: 'POST',
    path: '/api/sites/:site/cameras',
    caller: 'manager',
    params: () => ({ site: f.shopSlug }),
    body: () => ({
      camera_id: 'fuzz-cam',
      label: 'Fuzz',
      host: '10.0.0.5',
      port: 554,
      path: '/stream1',
      username: 'admin',
      password: 'secret',
      max_width: 1280,
      enabled: true,
      tuning: { detect_fps: 8, min_face_px: 64, rotate: 0 },
    }),
  },
  {
    method: 'PATCH',
    path: '/api/cameras/:id',
    caller: 'manager',
    params: () => ({ id: f.tillId }),
    body: () => ({ label: 'Till', host: '192.168.1.65', port: 554, path: '/s', username: 'u', password: 'p', max_width: 1280, enabled: true, tuning: { detect_fps: 8 } }),
  },
  { method: 'POST', path: '/api/cameras/:id/check', caller: 'manager', params: () => ({ id: 'entrance' }), body: () => ({ kind: 'placement', seconds: 30 }) },
  { method: 'GET', path: '/api/cameras/:id/snapshot.jpg', caller: 'staff', params: () => ({ id: f.entranceId }) },
  { method: 'GET', path: '/api/cameras/:id/live', caller: 'staff', params: () => ({ id: 'entrance' }) },
  { method: 'GET', path: '/api/sites/:site/live', caller: 'staff', params: () => ({ site: f.shopSlug }) },
  { method: 'DELETE', path: '/api/cameras/:id', caller: 'manager', params: () => ({ id: f.sideDoorId }) },
  // Shop PCs
  { method: 'POST', path: '/api/agent/enrol', caller: 'none', body: () => ({ code: 'AAAAAA-BBBBBB-CCCCCC-DDDDDD', hostname: 'till-pc', agent_version: '1.0.0' }) },
  { method: 'GET', path: '/api/agent/me', caller: 'agent' },
  { method: 'GET', path: '/api/agent/cameras', caller: 'agent' },
  { method: 'POST', path: '/api/agent/cameras/state', caller: 'agent', body: () => ({ cameras: [{ camera: 'entrance', connected: true, reason: 'ok' }] }) },
  { method: 'PUT', path: '/api/agent/cameras/:camera/snapshot', caller: 'agent', params: () => ({ camera: 'entrance' }), jpeg: 2 * 1024 * 1024 },
  { method: 'POST', path: '/api/agent/faces', caller: 'agent', jpeg: 512 * 1024 },
  { method: 'POST', path: '/api/agent/checks/claim', caller: 'agent' },
  {
    method: 'POST',
    path: '/api/agent/checks/:check/answer',
    caller: 'agent',
    params: () => ({ check: f.checkId }),
    body: () => ({ verdict: 'good', detail: { faces: 3, fraction_below_gate: 0.1 }, reason: 'fine', image: f.smallJpeg.toString('base64') }),
  },
  { method: 'GET', path: '/api/agent/live', caller: 'agent' },
  { method: 'POST', path: '/api/agent/live/:camera/frames', caller: 'agent', params: () => ({ camera: 'entrance' }), jpeg: 512 * 1024 },
  // Arrivals
  {
    method: 'GET',
    path: '/api/visits',
    caller: 'staff',
    query: () => ({ limit: '10', cursor: f.cursor0, site: f.shopSlug, site_id: f.shopId }),
    queryValues: { cursor: badCursors, limit: ['1001', '0000000', '9999999', '%2B5', '5%20'], site: ['empty-shop-x', 'fuzz-shop%00'] },
    queries: () => [`site=${f.shopSlug}&site_id=${f.emptyShopSlug}`, 'site=&site_id=', `limit=1&limit=2`, `cursor=${f.cursor0}&cursor=${f.cursor1}`],
  },
  {
    method: 'GET',
    path: '/api/visits/stream',
    caller: 'staff',
    query: () => ({ cursor: f.cursor0, site: f.shopSlug }),
    queryValues: { cursor: badCursors },
    headers: () => badCursors.map((c): [string, Record<string, string>] => [`Last-Event-ID ${c.slice(0, 20)}`, { 'Last-Event-ID': c }]),
  },
  // Customers, photos, purchases
  // Order and lapsed filter (docs/visits-and-customers.md).
  { method: 'GET', path: '/api/visitors', caller: 'staff', query: () => ({ sort: 'spend', lapsed_days: '30', limit: '10' }), queryValues: { sort: ['name', 'SPEND', 'visits%00'], lapsed_days: ['0', '3651', '-1', '1.5', '9999999'] } },
  { method: 'GET', path: '/api/visitors', caller: 'staff', query: () => ({ q: 'V-1', limit: '10', staff: 'false' }), queryValues: { limit: ['501', '0000000', '9999999'], q: ['V-', 'V-99999999999999999999', '%25', '_', '%5C'], staff: ['1', 'TRUE', 'yes', ''] } },
  { method: 'PATCH', path: '/api/visitors/:id', caller: 'manager', params: () => ({ id: 'V-2' }), body: () => ({ staff: false }) },
  { method: 'GET', path: '/api/visitors/:id', caller: 'staff', params: () => ({ id: 'V-1' }) },
  { method: 'GET', path: '/api/visitors/:id/history', caller: 'staff', params: () => ({ id: 'V-1' }) },
  { method: 'PUT', path: '/api/visitors/:id/profile', caller: 'staff', params: () => ({ id: 'V-1' }), body: profile },
  { method: 'POST', path: '/api/visitors/:id/merge', caller: 'manager', params: () => ({ id: 'V-3' }), body: () => ({ into: 'V-2' }) },
  { method: 'GET', path: '/api/visitors/:id/image', caller: 'staff', params: () => ({ id: 'V-1' }) },
  { method: 'DELETE', path: '/api/visitors/:id', caller: 'manager', params: () => ({ id: 'V-4' }) },
  { method: 'GET', path: '/api/faces/:id', caller: 'staff', params: () => ({ id: f.faceId }) },
  // Privacy (issue 29, docs/privacy.md)
  { method: 'GET', path: '/api/visitors/:id/export', caller: 'manager', params: () => ({ id: 'V-1' }) },
  {
    method: 'GET',
    path: '/api/audit',
    caller: 'owner',
    query: () => ({ limit: '10', action: 'customer.', customer: 'V-1', from: '2020-01-01', to: '2030-01-01T00:00:00Z' }),
    queryValues: { cursor: badCursors, limit: ['501', '0', '-1', '1e3'], from: ['2020-13-45', 'yesterday'], action: ['DROP TABLE', 'x'.repeat(65)] },
  },
  { method: 'PATCH', path: '/api/company/privacy', caller: 'owner', body: () => ({ recognition: 'all', template_retention_days: 90 }) },
  { method: 'GET', path: '/api/visitors/:id/purchases', caller: 'staff', params: () => ({ id: 'V-1' }), query: () => ({ limit: '10' }), queryValues: { limit: ['501', '0', '-1', '1e3', '9999999999999999999999'] } },
  { method: 'POST', path: '/api/purchases', caller: 'staff', body: purchase },
  { method: 'POST', path: '/api/purchases', caller: 'staff', body: () => ({ purchase_id: '22222222-2222-4222-8222-222222222222', ...purchase() }) },
  // Reports
  { method: 'GET', path: '/api/reports/footfall', caller: 'staff', query: reportQuery, queryValues: reportValues, queries: reportQueries },
  { method: 'GET', path: '/api/reports/conversion', caller: 'staff', query: reportQuery, queryValues: reportValues, queries: reportQueries },
  { method: 'GET', path: '/api/reports/regions', caller: 'staff', query: reportQuery, queryValues: reportValues },
  // CSV export (docs/reports.md): the same query with format=csv.
  { method: 'GET', path: '/api/reports/footfall', caller: 'staff', query: () => ({ ...reportQuery(), format: 'csv' }), queryValues: { ...reportValues, format: ['xlsx', 'CSV', 'json', 'csv%00', ''] } },
  { method: 'GET', path: '/api/reports/conversion', caller: 'staff', query: () => ({ ...reportQuery(), format: 'csv' }), queryValues: { ...reportValues, format: ['xlsx', 'CSV', 'json', 'csv%00', ''] } },
  // Assistant
  { method: 'GET', path: '/api/assistant', caller: 'staff' },
  { method: 'POST', path: '/api/assistant', caller: 'staff', body: () => ({ history: [{ role: 'assistant', text: 'Hello.' }, { role: 'user', text: 'How many visitors today?' }] }) },
  // The authentication service
  { method: 'POST', path: '/auth/client/sign-in', caller: 'none', body: () => ({ email: 'nobody@fuzz.test', password: 'wrong-password' }) },
  { method: 'POST', path: '/auth/client/sign-up', caller: 'none', body: () => ({ companyName: 'Fuzz Signup', email: 'fuzz-signup@fuzz.test', password: 'signup-pass-1' }) },
  { method: 'POST', path: '/auth/staff/phone/start', caller: 'none', body: () => ({ phoneNumber: '+14155550199', recaptchaToken: 'recaptcha-token' }) },
  { method: 'POST', path: '/auth/staff/phone/verify', caller: 'none', body: () => ({ mode: 'sign-in', sessionInfo: 'session-info', code: '123456' }) },
  { method: 'POST', path: '/auth/staff/phone/verify', caller: 'none', body: () => ({ mode: 'sign-in', idToken: 'not.a.jwt' }) },
  { method: 'GET', path: '/auth/session', caller: 'idToken' },
  { method: 'POST', path: '/auth/staff/sign-out', caller: 'staffIdToken', endsSessions: true },
  { method: 'POST', path: '/auth/client/sign-out', caller: 'idToken', endsSessions: true },
  { method: 'POST', path: '/auth/sign-out', caller: 'idToken2', endsSessions: true },
  // Outside both specs, but answered by head office all the same
  { method: 'GET', path: '/healthz', caller: 'none' },
  { method: 'GET', path: '/metrics', caller: 'none' },
];

/** Paths no route answers: the 404 of each envelope. */
const unknownPaths = ['/', '/api', '/api/', '/api/nope', '/api/admin', '/api/admin/nope', '/api/agent', '/auth', '/auth/', '/auth/nope', '/authx', '/api/visitors/V-1/nope', '/%ZZ', '/api/%00', '/api/sites/%E0%A4%A/check/x'];

const METHODS: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const routeKeys = new Set(routes.map((r) => `${r.method} ${r.path}`));

// ---- Building the cases ------------------------------------------------------------------------------------------

function fillPath(template: string, params: Record<string, string>): string {
  return template.replace(/:(\w+)/g, (_m, name: string) => (name in params ? params[name]! : encodeURIComponent(String(_m))));
}

function queryString(q: Record<string, string>, encode = true): string {
  const parts = Object.entries(q).map(([k, v]) => `${k}=${encode ? encodeURIComponent(v) : v}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Every key path of a body: objects and arrays, and what is inside them. */
function keyPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([...prefix, i], ...keyPaths(v, [...prefix, i]));
    });
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push([...prefix, k], ...keyPaths(v, [...prefix, k]));
  }
  return out;
}

function withChange(body: Record<string, unknown>, at: (string | number)[], change: { set: unknown } | 'delete'): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let node: Record<string | number, unknown> = copy;
  for (const k of at.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  const last = at[at.length - 1]!;
  if (change === 'delete') {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else {
    node[last] = change.set;
  }
  return copy;
}

function casesFor(route: Route): Case[] {
  const params = route.params?.() ?? {};
  const query = route.query?.() ?? {};
  const url = fillPath(route.path, params) + queryString(query);
  const right = tokenOf(route.caller);
  const rightHeaders = right ? headOf(right) : {};
  const sample = route.body?.();
  const validBody = sample === undefined ? undefined : toJson(sample);
  const hasBody = route.method !== 'GET';
  const jsonHeaders = { 'Content-Type': 'application/json' };
  const cases: Case[] = [];
  const add = (label: string, c: Partial<Case>) =>
    cases.push({
      label,
      method: c.method ?? route.method,
      url: c.url ?? url,
      headers: c.headers ?? (validBody !== undefined ? { ...rightHeaders, ...jsonHeaders } : rightHeaders),
      ...(c.body !== undefined ? { body: c.body } : validBody !== undefined && hasBody && c.method === undefined ? { body: validBody } : {}),
    });

  // 1. Callers: no token, broken tokens, the wrong kind of token, each role; the route's own caller last.
  const tokens: [string, Record<string, string>][] = [
    ['no token', {}],
    ['"Bearer" alone', { Authorization: 'Bearer' }],
    ['"Bearer" and spaces', { Authorization: 'Bearer    ' }],
    ['an unknown access token', headOf(`ffa_${'A'.repeat(43)}`)],
    ['an unknown shop-PC token', headOf(`ffs_${'A'.repeat(43)}`)],
    ['a refresh token as access token', headOf(f.selfRefresh)],
    ['Basic auth', { Authorization: 'Basic dXNlcjpwYXNzd29yZA==' }],
    ['a 10k-character token', headOf(`ffa_${LONG}`)],
    ['a 20k-character token (over the 16 KiB header limit)', headOf(`ffa_${LONG}${LONG}`)],
    ['two tokens', { Authorization: `Bearer ${f.staff} ${f.owner}` }],
    ['a latin-1 token', { Authorization: 'Bearer ffa_\u00e9\u00e8' }],
    ['a JWT-shaped garbage token', headOf('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.')],
  ];
  if (!route.endsSessions) {
    for (const c of ['agent', 'idToken', 'staff', 'manager', 'owner', 'admin'] as const) tokens.push([`the ${c} token`, headOf(f[c])]);
    tokens.push(['a lower-case "bearer" scheme', { Authorization: `bearer ${right ?? f.staff}` }]);
  }
  for (const [label, h] of tokens) {
    const headers = route.jpeg ? { ...h, 'Content-Type': 'image/jpeg' } : validBody !== undefined ? { ...h, ...jsonHeaders } : h;
    add(`caller: ${label}`, { headers, ...(route.jpeg ? { body: f.smallJpeg } : {}) });
  }
  for (const [label, h] of route.headers?.() ?? []) add(`header: ${label}`, { headers: { ...rightHeaders, ...h } });

  // 2. Body fields: each one missing, and each replaced by every bad value; then unknown fields.
  if (sample !== undefined) {
    for (const at of keyPaths(sample)) {
      const name = at.join('.');
      add(`body: ${name} missing`, { body: toJson(withChange(sample, at, 'delete')) });
      for (const [label, value] of badValues) add(`body: ${name} = ${label}`, { body: toJson(withChange(sample, at, { set: value })) });
    }
    add('body: an unknown field', { body: toJson({ ...sample, unknown_field: 'x' }) });
    add('body: unknown fields named like Object members', { body: `{"toString":"x","hasOwnProperty":1,"valueOf":null,${validBody!.slice(1)}` });
    add('body: every field null', { body: toJson(Object.fromEntries(Object.keys(sample).map((k) => [k, null]))) });
    add('body: every field 10k characters', { body: toJson(Object.fromEntries(Object.keys(sample).map((k) => [k, LONG]))) });
  }

  // 3. Whole bodies that are not the expected JSON object (also sent to routes that take no body).
  if (hasBody && !route.jpeg) {
    for (const [label, body, headers] of bodyShapes(validBody ?? '{}')) add(`body: ${label}`, { body, headers: { ...rightHeaders, ...headers } });
  }
  if (route.jpeg) {
    const jpegHead = { ...rightHeaders, 'Content-Type': 'image/jpeg' };
    const shapes: [string, string | Buffer, Record<string, string>][] = [
      ['JSON instead of a picture', '{"a":1}', { ...rightHeaders, ...jsonHeaders }],
      ['a picture without a content type', f.smallJpeg, { ...rightHeaders, 'Content-Type': '' }],
      ['a picture as application/octet-stream', f.smallJpeg, { ...rightHeaders, 'Content-Type': 'application/octet-stream' }],
      ['an empty picture', '', jpegHead],
      ['text as a picture', 'not a jpeg at all', jpegHead],
      ['a JPEG marker and nothing else', Buffer.from([0xff, 0xd8, 0xff]), jpegHead],
      ['a JPEG marker and zeros', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(4096)]), jpegHead],
      ['a truncated picture', f.smallJpeg.subarray(0, Math.floor(f.smallJpeg.length / 2)), jpegHead],
      ['a PNG signature', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]), jpegHead],
      ['a picture over the limit', Buffer.concat([f.smallJpeg, Buffer.alloc(route.jpeg + 1024)]), jpegHead],
    ];
    for (const [label, body, headers] of shapes) add(`body: ${label}`, { body, headers });
  }

  // 4. Query parameters: each bad value, repeated, bracketed, bare; then route-specific values and whole queries.
  const names = [...new Set([...Object.keys(query), ...Object.keys(route.queryValues ?? {})])];
  for (const name of names) {
    const others = Object.fromEntries(Object.entries(query).filter(([k]) => k !== name));
    const base = fillPath(route.path, params);
    const withValue = (raw: string) => `${base}${queryString(others)}${Object.keys(others).length ? '&' : '?'}${raw}`;
    if (name in query) add(`query: ${name} missing`, { url: base + queryString(others) });
    for (const [label, value] of badQueryValues) add(`query: ${name} = ${label}`, { url: withValue(`${name}=${value}`) });
    for (const value of route.queryValues?.[name] ?? []) add(`query: ${name} = ${value.slice(0, 40)}`, { url: withValue(`${name}=${value}`) });
    add(`query: ${name} repeated`, { url: withValue(`${name}=1&${name}=2`) });
    add(`query: ${name}[]`, { url: withValue(`${name}[]=1`) });
    add(`query: ${name}[a]`, { url: withValue(`${name}[a]=1`) });
    add(`query: bare ${name}`, { url: withValue(name) });
  }
  for (const q of route.queries?.() ?? []) add(`query: ${q.slice(0, 80)}`, { url: `${fillPath(route.path, params)}?${q}` });
  add('query: unknown, repeated and broken parameters', { url: `${url}${url.includes('?') ? '&' : '?'}limit=1&limit=2&x=%ZZ&__proto__=1&y[z]=2` });

  // 5. Path references.
  for (const name of Object.keys(params)) {
    for (const [label, ref] of badRefs) add(`path: ${name} = ${label}`, { url: fillPath(route.path, { ...params, [name]: ref }) + queryString(query) });
  }

  // 6. Methods the path does not have (never one that another route of the same path answers).
  for (const m of METHODS) {
    if (routeKeys.has(`${m} ${route.path}`)) continue;
    add(`method: ${m}`, { method: m, headers: rightHeaders, ...(m === 'GET' ? {} : { body: '{}' }) });
  }
  return cases;
}

// ---- Sending and judging -----------------------------------------------------------------------------------------

let h: Harness;

async function send(c: Case): Promise<Answer> {
  const headers = { ...c.headers };
  if (c.body !== undefined && headers['Content-Type'] === '') delete headers['Content-Type'];
  const res = await fetch(h.url + c.url, { method: c.method, headers, body: c.body, redirect: 'manual' });
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('text/event-stream')) {
    await res.body?.cancel().catch(() => {});
    return { status: res.status, type, text: '(an event stream)' };
  }
  const buf = Buffer.from(await res.arrayBuffer());
  const text = type.startsWith('image/') ? `(${buf.length} bytes of ${type})` : buf.toString('utf8');
  let json: unknown;
  if (type.includes('json')) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.status, type, text, json };
}

/** 5xx answers the spec and docs name: features off or misconfigured, and failing dependencies. */
const documented5xx: Record<string, number[]> = {
  assistant_off: [501],
  assistant_unavailable: [502],
  assistant_misconfigured: [503],
  images_disabled: [501],
  broker_unavailable: [502, 503],
  storage_error: [502],
  no_encryption_key: [503],
  identity_provider_error: [502],
};

function problemsOf(c: Case, a: Answer): string[] {
  const pathname = new URL(h.url + c.url).pathname;
  const authPath = pathname === '/auth' || pathname.startsWith('/auth/');
  const out: string[] = [];
  const body = a.json as Record<string, unknown> | undefined;
  if (a.status >= 400) {
    if (!a.type.includes('application/json') || body === undefined || typeof body !== 'object' || body === null || Array.isArray(body)) {
      out.push(`the error is not a JSON object (Content-Type "${a.type}")`);
      return out;
    }
    if (typeof body.message !== 'string' || body.message.trim() === '') out.push('no message');
    if (authPath) {
      if (typeof body.code !== 'string' || body.code === '') out.push('no code (the /auth envelope is { code, message, details, requestId })');
      if (!body.details || typeof body.details !== 'object' || Array.isArray(body.details)) out.push('details is not an object');
      if (typeof body.requestId !== 'string' || body.requestId === '') out.push('no requestId');
      if ('error' in body) out.push('an /api envelope on an /auth path');
    } else {
      if (typeof body.error !== 'string' || body.error === '') out.push('no error code (the /api envelope is { error, message })');
      if ('code' in body && 'requestId' in body) out.push('an /auth envelope on an /api path');
    }
  }
  if (a.status >= 500) {
    const allowed = authPath ? body?.code === 'AUTH_PROVIDER_ERROR' && [502, 503].includes(a.status) : (documented5xx[String(body?.error)] ?? []).includes(a.status);
    if (!allowed) out.push(`status ${a.status}`);
  }
  if (a.status < 400 && a.status !== 204) {
    const csv = a.type.startsWith('text/csv') && /[?&]format=csv(&|$)/i.test(c.url);
    const ok = a.type.includes('application/json') ? a.json !== undefined : a.type.startsWith('image/jpeg') || a.type.startsWith('text/event-stream') || csv;
    if (!ok) out.push(`a ${a.status} answer that is neither JSON, a JPEG, an event stream nor an asked-for CSV (Content-Type "${a.type}")`);
  }
  if (a.status < 200 || (a.status >= 300 && a.status < 400)) out.push(`status ${a.status}`);
  return out;
}

const clip = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}... (${s.length} characters)` : s);

function report(c: Case, a: Answer, problems: string[]): string {
  const body = c.body === undefined ? '(none)' : Buffer.isBuffer(c.body) ? `(${c.body.length} bytes)` : clip(JSON.stringify(c.body));
  const auth = c.headers.Authorization ? clip(c.headers.Authorization, 40) : '(none)';
  const type = c.headers['Content-Type'] ?? '(none)';
  return [
    `${c.method} ${clip(c.url, 200)}   [${c.label}]`,
    `  Authorization: ${auth}   Content-Type: ${type}`,
    `  body: ${body}`,
    `  -> ${a.status} ${a.type}: ${clip(a.text)}`,
    `  wrong: ${problems.join('; ')}`,
  ].join('\n');
}

let sent = 0;

async function fuzz(cases: Case[]): Promise<void> {
  const failures: string[] = [];
  for (const c of cases) {
    const a = await send(c);
    sent++;
    const problems = problemsOf(c, a);
    if (problems.length > 0) failures.push(report(c, a, problems));
  }
  expect(failures.length, `${failures.length} of ${cases.length} requests answered wrongly:\n\n${failures.join('\n\n')}\n`).toBe(0);
}

/** Bytes straight onto a socket: requests fetch refuses to send. The answer is read until the server closes. */
function sendRaw(text: string): Promise<Answer> {
  const { port, hostname } = new URL(h.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(text));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => {});
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('utf8');
      const split = all.indexOf('\r\n\r\n');
      const head = split >= 0 ? all.slice(0, split) : all;
      const text = split >= 0 ? all.slice(split + 4) : '';
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      const type = /^content-type:\s*(.*)$/im.exec(head)?.[1]?.trim() ?? '';
      let json: unknown;
      try {
        json = type.includes('json') ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ status, type, text: text || head, json });
    });
  });
}

// ---- The fake LLM behind the assistant ---------------------------------------------------------------------------

function fakeLlm(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ id: 'fuzz', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'There were 4 visitors.' }, finish_reason: 'stop' }] }));
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

// ---- The test ------------------------------------------------------------------------------------------------------

describe('API fuzz: malformed requests never answer 500, and every error is the envelope of its path', () => {
  let idp: StandIn;
  let llm: Awaited<ReturnType<typeof fakeLlm>>;
  let dir: string;
  let pc: ShopPc;

  beforeAll(async () => {
    idp = await startIdp();
    llm = await fakeLlm();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-fuzz-'));
    h = await startHarness({
      ...(idp.config(dir) as Partial<RawConfig>),
      FOOTFALL_IMAGES: 'local',
      FOOTFALL_ASSISTANT_URL: `${llm.url}/v1`,
      FOOTFALL_ASSISTANT_MODEL: 'fuzz-model',
      FOOTFALL_ASSISTANT_TIMEOUT_MS: 2000,
      FOOTFALL_INGEST_BATCH_MS: 1,
    });
    const c = await h.company('Fuzz Retail');
    const cursors = feedCursors(h.server.deps.keys);
    [f.cursor0, f.cursor1] = [cursors.encode(c.id, 0), cursors.encode(c.id, 1)];
    f.owner = c.ownerToken;
    f.admin = await h.adminToken();
    [f.staff, f.manager, f.logout] = await Promise.all([memberToken(h, c.ownerToken, 'staff'), memberToken(h, c.ownerToken, 'manager'), memberToken(h, c.ownerToken, 'staff')]);
    const member = async (email: string) => {
      const r = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { email, full_name: email.split('@')[0], role: 'staff', password: 'member-password-1' } });
      if (r.status !== 201) throw new Error(`member ${email}: ${r.status} ${JSON.stringify(r.body)}`);
    };
    await member('self@fuzz.test');
    const self = await h.login('self@fuzz.test', 'member-password-1');
    f.self = self.access_token;
    f.selfRefresh = self.refresh_token;
    f.victimEmail = 'victim@fuzz.test';
    await member(f.victimEmail);
    const invite = async (email: string) => {
      const r = await h.request('POST', '/api/team/invitations', { token: c.ownerToken, body: { email, full_name: 'Invited Person', role: 'staff' } });
      if (r.status !== 201) throw new Error(`invitation ${email}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as { id: string; code: string };
    };
    f.invitationId = (await invite('withdraw-me@fuzz.test')).id;
    f.invitationCode = (await invite('redeem-me@fuzz.test')).code;

    pc = await shopPc(h, c.ownerToken, c.slug, 'Fuzz Shop');
    f.agent = pc.enrolment.token;
    f.shopSlug = pc.shop.slug;
    f.shopId = pc.shop.site_id;
    f.entranceId = (await addCamera(h, c.ownerToken, f.shopSlug, { camera_id: 'entrance' })).id;
    f.tillId = (await addCamera(h, c.ownerToken, f.shopSlug, { camera_id: 'till' })).id;
    f.sideDoorId = (await addCamera(h, c.ownerToken, f.shopSlug, { camera_id: 'side-door' })).id;
    f.emptyShopSlug = (await openShop(h, c.ownerToken, { name: 'Empty Shop' })).slug;
    f.smallJpeg = await jpeg(32, 24);

    // A check the shop PC has claimed (its answer route is fuzzed).
    const check = await h.request('POST', `/api/cameras/${f.entranceId}/check`, { token: c.ownerToken, body: { kind: 'connection' } });
    if (check.status !== 202) throw new Error(`check: ${check.status} ${JSON.stringify(check.body)}`);
    const claim = await h.request('POST', '/api/agent/checks/claim', { token: f.agent });
    f.checkId = claim.body.job.check_id;

    // Four customers (V-1 with a photo), from synthetic faces: a fixed seed, so the same every run.
    const up = await pc.uploadFace(await jpeg(64, 64));
    if (up.status !== 201) throw new Error(`face upload: ${up.status} ${JSON.stringify(up.body)}`);
    f.faceId = up.body.face_image_id;
    const faces = new Faces(20240601);
    for (let i = 1; i <= 4; i++) {
      const now = new Date().toISOString();
      await pc.publish({
        visit_id: `00000000-0000-4000-8000-00000000000${i}`,
        occurred_at: now,
        camera_id: 'entrance',
        embedding: encodeEmbedding(faces.identity()),
        recognition_model: 'fuzz-model',
        quality: 0.9,
        passed_gate: true,
        attributes: { gender: 'female', age: 30, emotion: 'happy' },
        ...(i === 1 ? { face_image_id: f.faceId } : {}),
      });
      await settled(h);
    }
    await waitFor(async () => (await h.request('GET', '/api/visitors', { token: c.ownerToken })).body.length === 4, 5000);

    const victim1 = await h.company('Fuzz Victim One');
    f.victim1Slug = victim1.slug;
    f.victim1OwnerEmail = victim1.ownerEmail;
    const victim2 = await h.company('Fuzz Victim Two');
    f.victim2Slug = victim2.slug;
    const suspend = await h.request('PATCH', `/api/admin/clients/${victim2.slug}`, { token: f.admin, body: { active: false } });
    if (suspend.status !== 200) throw new Error(`suspend: ${suspend.status} ${JSON.stringify(suspend.body)}`);

    const signUp = async (n: number) => {
      const r = await h.request('POST', '/auth/client/sign-up', { body: { companyName: `Fuzz Identity ${n}`, email: `idp-owner-${n}@fuzz.test`, password: 'idp-password-1' } });
      if (r.status !== 201) throw new Error(`sign-up: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.sessionToken as string;
    };
    f.idToken = await signUp(1);
    f.idToken2 = await signUp(2);
    const phone = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { email: 'phone@fuzz.test', full_name: 'Phone Staff', role: 'staff', phone: '+14155550177' } });
    if (phone.status !== 201) throw new Error(`phone member: ${phone.status} ${JSON.stringify(phone.body)}`);
    f.staffIdToken = (await idp.phoneSignIn('+14155550177')).idToken;
  });

  afterAll(async () => {
    console.log(`api-fuzz: ${sent} requests sent`);
    await pc?.close();
    await h?.close();
    await idp?.close();
    await llm?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const route of routes) {
    const n = routes.filter((r) => r.method === route.method && r.path === route.path).indexOf(route);
    it(`${route.method} ${route.path}${n > 0 ? ` (#${n + 1})` : ''}`, async () => {
      await fuzz(casesFor(route));
    });
  }

  it('requests that are not valid HTTP: the envelope all the same, then the connection closes', async () => {
    const over = 'x'.repeat(20_000);
    const raw: [string, string, string][] = [
      ['not HTTP at all', '/', 'HELLO\r\n\r\n'],
      ['a request line without a path', '/', 'GET api/sites HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['a space in a header name', '/api/sites', 'GET /api/sites HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'],
      ['a control character in a header value', '/api/sites', 'GET /api/sites HTTP/1.1\r\nHost: x\r\nX-A: a\u0001b\r\n\r\n'],
      ['a chunk size that is not hex', '/api/auth/login', 'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n'],
      ['both Content-Length and chunked', '/api/auth/login', 'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'],
      ['a body shorter than its Content-Length', '/api/auth/login', 'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":1}'],
      ['a 20k-character header on /api', '/api/sites', `GET /api/sites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${over}\r\n\r\n`],
      ['a 20k-character header on /auth', '/auth/session', `GET /auth/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${over}\r\n\r\n`],
      ['a 20k-character path on /auth', `/auth/${over}`, `POST /auth/${over} HTTP/1.1\r\nHost: x\r\n\r\n`],
      ['an HTTP/0.9 request line', '/', 'GET /\r\n\r\n'],
    ];
    const failures: string[] = [];
    for (const [label, url, text] of raw) {
      const c: Case = { label, method: text.split(' ')[0]!, url, headers: {}, body: text };
      const a = await sendRaw(text);
      sent++;
      const problems = problemsOf(c, a);
      if (a.status === 0) problems.push('no answer');
      if (problems.length > 0) failures.push(report(c, a, problems));
    }
    expect(failures.length, `${failures.length} of ${raw.length} raw requests answered wrongly:\n\n${failures.join('\n\n')}\n`).toBe(0);
  });

  it('unknown paths, with every method', async () => {
    const cases: Case[] = [];
    for (const p of unknownPaths) {
      for (const m of METHODS) {
        if (p === '/' && m === 'GET') continue; // GET / is the pointer to the console and API reference (console-serve.test.ts)
        cases.push({ label: 'unknown path', method: m, url: p, headers: headOf(f.staff), ...(m === 'GET' ? {} : { body: '{', }) });
        cases.push({ label: 'unknown path, admin', method: m, url: p, headers: { ...headOf(f.admin), 'Content-Type': 'application/json' }, ...(m === 'GET' ? {} : { body: '[1]' }) });
      }
    }
    await fuzz(cases);
  });
});
