import { randomBytes } from 'node:crypto';
import { connect, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import { upFilterAllShops, type UpName } from '../../shared/topics.js';
import type { Config } from '../config.js';
import { AckingSession } from './acking-session.js';
import type { Broker, HeldMessage, ShopLogin } from './broker.js';
import { alreadyDone, Dynsec, type DynsecCommand, notFound } from './dynsec.js';

/**
 * An external Mosquitto 2 with its dynamic-security plugin (FOOTFALL_MQTT_URL; docs/operations.md, "An external
 * MQTT broker"). Head office is two clients of it, both with its own login:
 *
 * - the control client (mqtt.js, clean session): dynamic-security commands (each shop PC's client and role),
 *   notices to shop PCs, and QoS 0 listeners (heartbeats);
 * - the ingest session (acking-session.ts, persistent, `<FOOTFALL_MQTT_CLIENT_ID>-ingest`): visits and crossings at
 *   QoS 1, acknowledged once stored, through one shared subscription that every head-office process joins, so that
 *   each message is stored by one process (docs/scale-out.md, "Several head-office processes").
 *
 * Each shop PC is a dynamic-security client named by its broker username, with one role `footfall-shop.<username>`
 * whose ACL is the shop's topic rule: publishClientSend `<prefix>up/#`, subscribePattern `<prefix>down/#`. The
 * plugin's default ACL (deny publishing and subscribing) refuses everything else, so a shop PC can neither read nor
 * write another shop's topics. Head office gives its own login the role `footfall-head-office` (publish, subscribe
 * and receive on `ff/#`) on every connect; its login needs to be a dynamic-security admin for that (the admin made
 * by `mosquitto_ctrl dynsec init`).
 *
 * A login change the broker did not take (unreachable, timeout) is kept and sent again on the next connect and every
 * 30 s, newest change per username, so the broker ends up as the shops table says.
 */
export const HEAD_OFFICE_ROLE = 'footfall-head-office';
export const shopRole = (username: string): string => `footfall-shop.${username}`;

/** Which up messages the ingest session takes (each is held until stored). */
const HELD: UpName[] = ['visit', 'crossing'];

/** The shared-subscription prefix of head office's ingest sessions: one group, whatever the process. */
const INGEST_SHARE = '$share/footfall/';
/** The shared-subscription prefix of the listeners that one process of several is enough for (heartbeats). */
const LISTEN_SHARE = '$share/footfall-listen/';

/**
 * Head office's rules on the broker: publish, receive and subscribe on ff/#, and subscribe through its two shared
 * subscriptions (Mosquitto checks a shared subscription's filter with its `$share/<group>/` prefix).
 */
const HEAD_OFFICE_ACLS = [
  { acltype: 'publishClientSend', topic: 'ff/#', priority: 0, allow: true },
  { acltype: 'publishClientReceive', topic: 'ff/#', priority: 0, allow: true },
  { acltype: 'subscribePattern', topic: 'ff/#', priority: 0, allow: true },
  { acltype: 'subscribePattern', topic: `${INGEST_SHARE}ff/#`, priority: 0, allow: true },
  { acltype: 'subscribePattern', topic: `${LISTEN_SHARE}ff/#`, priority: 0, allow: true },
];

type LoginChange = { kind: 'set'; login: ShopLogin } | { kind: 'end'; username: string; remove: boolean };

/** Does a concrete topic match an MQTT filter (`+` one level, `#` the rest)? */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

function loginCommands(login: ShopLogin): DynsecCommand[] {
  const rolename = shopRole(login.username);
  return [
    {
      command: 'createRole',
      rolename,
      acls: [
        { acltype: 'publishClientSend', topic: `${login.prefix}up/#`, priority: 0, allow: true },
        { acltype: 'subscribePattern', topic: `${login.prefix}down/#`, priority: 0, allow: true },
      ],
    },
    { command: 'createClient', username: login.username, password: login.password, roles: [{ rolename, priority: 0 }] },
    // The client may exist (an earlier enrolment): modifyClient sets the new password and exactly this role (the
    // plugin ends the connections of a client it modifies, so the earlier password's connection is cut off).
    // Not addClientRole: Mosquitto 2.0.11 answers "Internal error" for a role the client already has.
    { command: 'modifyClient', username: login.username, password: login.password, roles: [{ rolename, priority: 0 }] },
    { command: 'enableClient', username: login.username },
  ];
}

function changeCommands(change: LoginChange): DynsecCommand[] {
  if (change.kind === 'set') return loginCommands(change.login);
  if (!change.remove) return [{ command: 'disableClient', username: change.username }];
  return [
    { command: 'deleteClient', username: change.username },
    { command: 'deleteRole', rolename: shopRole(change.username) },
  ];
}

export interface ExternalBroker extends Broker {
  readonly kind: 'external';
  /** The ingest session's counters (tests, metrics). */
  readonly ingestStats: { delivered: number; acked: number; refused: number; connects: number };
}

export async function connectExternalBroker(config: Config, log: Logger): Promise<ExternalBroker> {
  const url = new URL(config.FOOTFALL_MQTT_URL!);
  const username = config.FOOTFALL_MQTT_USERNAME ?? (url.username ? decodeURIComponent(url.username) : undefined);
  const password = config.FOOTFALL_MQTT_PASSWORD ?? (url.password ? decodeURIComponent(url.password) : undefined);
  const server = new URL(`${url.protocol}//${url.host}`);
  const publicUrl = new URL(config.FOOTFALL_MQTT_PUBLIC_URL ?? server.href);
  const publicTls = publicUrl.protocol === 'mqtts:';
  const publicAddress = { host: publicUrl.hostname.replace(/^\[|\]$/g, ''), port: Number(publicUrl.port) || (publicTls ? 8883 : 1883), tls: publicTls };
  const where = server.host;

  const control: MqttClient = connect(server.href, {
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    clientId: `${config.FOOTFALL_MQTT_CLIENT_ID}-${randomBytes(4).toString('hex')}`,
    clean: true,
    protocolVersion: 5,
    reconnectPeriod: 2000,
    connectTimeout: 10_000,
    manualConnect: true,
  });
  const dynsec = new Dynsec(control);
  /** `subscription`: the filter as subscribed (with the shared prefix when only one process of several should get it). */
  const listeners = new Set<{ filter: string; subscription: string; handler: (m: HeldMessage) => void }>();
  const pending = new Map<string, LoginChange>();
  const holds = new Map<UpName, (m: HeldMessage) => Promise<void>>();
  // Messages of a kind whose hold is not registered yet (the session delivers what queued while head office was
  // away as soon as it connects): kept, unacknowledged, until it is.
  const early = new Map<UpName, { message: HeldMessage; resolve: () => void; reject: (err: Error) => void }[]>();
  let closing = false;

  control.on('message', (topic, payload) => {
    for (const l of listeners) {
      if (!topicMatches(l.filter, topic)) continue;
      try {
        l.handler({ topic, payload });
      } catch (err) {
        log.error({ err, topic }, 'broker listener failed');
      }
    }
  });
  control.on('error', (err) => log.warn({ err, broker: where }, 'MQTT broker connection error'));
  control.on('close', () => dynsec.failAll('the connection to the MQTT broker closed'));

  const apply = async (change: LoginChange): Promise<void> => {
    const tolerate = change.kind === 'set' ? alreadyDone : notFound;
    await dynsec.run(changeCommands(change), tolerate);
  };
  const flushPending = async (): Promise<void> => {
    for (const [name, change] of [...pending]) {
      try {
        await apply(change);
        if (pending.get(name) === change) pending.delete(name);
      } catch (err) {
        log.warn({ err, username: name }, 'broker login change not applied yet; will retry');
        return;
      }
    }
  };
  // The shops table is the truth: a shop PC's login the broker lacks (its dynamic-security.json lost or restored
  // from an older copy) is created again. Existing clients are left as they are (the plugin keeps no password to compare).
  let source: (() => Promise<ShopLogin[]>) | undefined;
  const syncLogins = async (): Promise<void> => {
    if (!source) return;
    const [listed] = await dynsec.run([{ command: 'listClients', verbose: false, count: -1, offset: 0 }]);
    const have = new Set((listed?.data as { clients?: unknown[] } | undefined)?.clients?.map((c) => (typeof c === 'string' ? c : (c as { username?: string }).username)) ?? []);
    let created = 0;
    for (const login of await source()) {
      if (have.has(login.username) || pending.has(login.username)) continue;
      pending.set(login.username, { kind: 'set', login });
      created++;
    }
    if (created > 0) log.warn({ logins: created, broker: where }, 'the broker lacked shop PC logins the shops table has: creating them');
  };
  const change = async (key: string, c: LoginChange): Promise<void> => {
    pending.set(key, c);
    if (!control.connected) {
      log.warn({ username: key, broker: where }, 'MQTT broker not reachable: the login change is applied when it is');
      return;
    }
    await apply(c);
    if (pending.get(key) === c) pending.delete(key);
  };

  /**
   * Setup after each connect of the control client. Resolves false when it had to give head office's own login its
   * role: the plugin ends the connections of a client whose roles change, so setup finishes on the reconnect.
   */
  const setup = async (): Promise<boolean> => {
    await dynsec.attach();
    if (username !== undefined) {
      const [own] = await dynsec.run([{ command: 'getClient', username }], notFound);
      const roles = (own?.data as { client?: { roles?: { rolename?: string }[] } } | undefined)?.client?.roles;
      if (own?.error) {
        log.warn({ username, broker: where }, "head office's login is not a dynamic-security client: give it publish, subscribe and receive on ff/# yourself");
      } else if (!roles?.some((r) => r.rolename === HEAD_OFFICE_ROLE)) {
        await dynsec.run([{ command: 'createRole', rolename: HEAD_OFFICE_ROLE, acls: HEAD_OFFICE_ACLS }], alreadyDone);
        log.info({ username, role: HEAD_OFFICE_ROLE }, "gave head office's broker login its role on ff/# (the broker reconnects it)");
        dynsec.run([{ command: 'addClientRole', username, rolename: HEAD_OFFICE_ROLE, priority: 100 }], alreadyDone).catch(() => undefined);
        return false;
      } else {
        // A role made by an earlier version lacks the shared subscriptions' rules (Mosquitto checks a `$share/...`
        // filter as written): added now. The plugin applies a role's new rule to the next subscription at once.
        const added = await dynsec.run(
          HEAD_OFFICE_ACLS.filter((a) => a.topic.startsWith('$share/')).map((a) => ({ command: 'addRoleACL', rolename: HEAD_OFFICE_ROLE, ...a })),
          alreadyDone,
        );
        if (added.some((r) => !r.error)) log.info({ role: HEAD_OFFICE_ROLE }, "added the shared subscriptions' rules to head office's broker role");
      }
    }
    for (const l of listeners) await control.subscribeAsync(l.subscription, { qos: 0 });
    await syncLogins();
    await flushPending();
    return true;
  };
  let ready: { resolve: () => void; reject: (err: Error) => void } | undefined;
  const first = new Promise<void>((resolve, reject) => {
    ready = { resolve, reject };
  });
  control.on('connect', () => {
    setup().then(
      (done) => {
        if (done) ready?.resolve();
      },
      (err: unknown) => {
        if (ready) log.warn({ err, broker: where }, 'MQTT broker setup failed; retried on the next connect');
        else log.error({ err, broker: where }, 'MQTT broker setup after reconnect failed');
      },
    );
  });
  control.once('error', (err) => ready?.reject(new Error(`cannot connect to the MQTT broker at ${where}: ${err.message}`)));
  const giveUp = setTimeout(() => ready?.reject(new Error(`cannot connect to the MQTT broker at ${where}: not ready in 20 s`)), 20_000);
  giveUp.unref();
  control.connect();
  try {
    await first;
  } catch (err) {
    control.end(true);
    throw err;
  } finally {
    clearTimeout(giveUp);
    ready = undefined;
  }
  const retry = setInterval(() => {
    if (pending.size > 0 && control.connected) void flushPending();
  }, 30_000);
  retry.unref();

  const session = new AckingSession({
    url: server,
    username,
    password,
    clientId: `${config.FOOTFALL_MQTT_CLIENT_ID}-ingest`,
    // One shared subscription for every head-office process: each message goes to one of them (MQTT 5, 4.8.2).
    filters: HELD.map((n) => `${INGEST_SHARE}${upFilterAllShops(n)}`),
    // Sessions of versions before several processes were subscribed without the share: they would get every message.
    retired: HELD.map((n) => upFilterAllShops(n)),
    log,
    onMessage(topic, payload) {
      const name = HELD.find((n) => topicMatches(upFilterAllShops(n), topic));
      if (!name) return Promise.resolve();
      const message = { topic, payload };
      const hold = holds.get(name);
      if (hold) return hold(message);
      if (closing) return Promise.reject(new Error('head office is stopping'));
      return new Promise<void>((resolve, reject) => {
        const list = early.get(name) ?? [];
        list.push({ message, resolve, reject });
        early.set(name, list);
      });
    },
  });
  try {
    await session.start();
  } catch (err) {
    clearInterval(retry);
    control.end(true);
    throw err;
  }
  log.info({ broker: where, public: `${publicUrl.protocol}//${publicAddress.host}:${publicAddress.port}` }, 'connected to the external MQTT broker');

  return {
    kind: 'external',
    port: publicAddress.port,
    publicAddress,
    get accepting() {
      return !closing && control.connected;
    },
    connectedClients: undefined,
    connections: () => undefined,
    get ingestStats() {
      return session.stats;
    },
    setAuth(auth) {
      // Mosquitto authenticates by itself; it only has to hold every login head office has.
      source = () => auth.logins();
      if (control.connected) void syncLogins().then(flushPending, (err: unknown) => log.error({ err, broker: where }, 'shop login sync failed'));
    },
    holdAcks(name, handler) {
      holds.set(name, handler);
      for (const e of early.get(name)?.splice(0) ?? []) handler(e.message).then(e.resolve, e.reject);
      return () => {
        if (holds.get(name) === handler) holds.delete(name);
      };
    },
    async listen(filter, handler, opts = {}) {
      const subscription = opts.shared ? `${LISTEN_SHARE}${filter}` : filter;
      const l = { filter, subscription, handler };
      listeners.add(l);
      await control.subscribeAsync(subscription, { qos: 0 });
      return async () => {
        listeners.delete(l);
        if ([...listeners].some((x) => x.subscription === subscription)) return;
        if (control.connected) await control.unsubscribeAsync(subscription).catch(() => undefined);
      };
    },
    async publish(topic, payload, { qos, retain }) {
      if (closing) throw new Error('head office is stopping');
      await control.publishAsync(topic, payload, { qos, retain });
    },
    setLogin(login) {
      return change(login.username, { kind: 'set', login });
    },
    async endLogin(name, { remove }) {
      await change(name, { kind: 'end', username: name, remove });
      return undefined;
    },
    async close() {
      closing = true;
      clearInterval(retry);
      for (const list of early.values()) for (const e of list.splice(0)) e.reject(new Error('head office is stopping'));
      await session.stop();
      dynsec.failAll('head office is stopping');
      await control.endAsync();
    },
  };
}
