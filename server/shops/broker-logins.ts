import { randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, inArray, isNotNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import { shopPrefix } from '../../shared/topics.js';
import type { Broker, BrokerAuth, ShopLogin } from '../broker/broker.js';
import type { CompanyPurger } from '../clients/deletion.js';
import type { Keys } from '../crypto/keys.js';
import type { Store } from '../db/open.js';
import { one } from '../db/query.js';
import { companies, shops } from '../db/tables.js';

/** The broker would not take a new login (it is closed or failing). Routes answer 502 broker_unavailable. */
export class BrokerRefused extends Error {}

interface Scope {
  shopId: string;
  prefix: string;
}

/**
 * Shop logins, backed by the shops table. On the embedded broker this is its BrokerAuth; on an external one the
 * broker checks logins itself and `activate`/`end` push each change to it (Broker.setLogin, Broker.endLogin).
 *
 * Embedded: authentication reads the database every time
 * (a connect is rare) and opens the sealed secret with the server key; a connection that authenticated gets its
 * shop's topic prefix cached for the per-message checks. The cache only ever holds logins that authenticated, and
 * `end` and `activate` (shop deleted, secret rotated, company deleted) evicts the entry and closes the connections in one go, so
 * it never outlives the row.
 *
 * Topic rule: a shop PC publishes only under `<prefix>up/` and subscribes only under `<prefix>down/`.
 */
export class ShopLogins implements BrokerAuth {
  private readonly scopes = new Map<string, Scope>();

  constructor(private readonly deps: { store: Store; keys: Keys; broker: Broker; log: Logger }) {}

  async authenticate(username: string, password: string): Promise<boolean> {
    const row = await one(this.deps.store.db
      .select({ shopId: shops.id, shopSlug: shops.slug, sealed: shops.brokerSecret, companySlug: companies.slug })
      .from(shops)
      .innerJoin(companies, eq(companies.id, shops.companyId))
      .where(eq(shops.brokerUsername, username)));
    if (!row?.sealed) return false;
    let secret: string;
    try {
      secret = this.deps.keys.decrypt(row.sealed);
    } catch (err) {
      this.deps.log.error({ err, username }, 'broker login: the stored secret cannot be opened');
      return false;
    }
    const a = Buffer.from(secret);
    const b = Buffer.from(password);
    if (a.length !== b.length || !timingSafeEqual(a, b)) return false;
    this.scopes.set(username, { shopId: row.shopId, prefix: shopPrefix(row.companySlug, row.shopSlug) });
    return true;
  }

  canPublish(username: string, topic: string): boolean {
    const scope = this.scopes.get(username);
    return scope !== undefined && topic.startsWith(scope.prefix + 'up/') && topic.length > scope.prefix.length + 3;
  }

  canSubscribe(username: string, filter: string): boolean {
    const scope = this.scopes.get(username);
    return scope !== undefined && filter.startsWith(scope.prefix + 'down/') && filter.length > scope.prefix.length + 5;
  }

  /** Every enrolled shop PC's login (an external broker creates the ones it lacks on connect). */
  async logins(): Promise<ShopLogin[]> {
    const rows = await this.deps.store.db
      .select({ username: shops.brokerUsername, shopSlug: shops.slug, sealed: shops.brokerSecret, companySlug: companies.slug })
      .from(shops)
      .innerJoin(companies, eq(companies.id, shops.companyId))
      .where(and(isNotNull(shops.brokerSecret), isNotNull(shops.agentTokenHash)));
    const out: ShopLogin[] = [];
    for (const r of rows) {
      try {
        out.push({ username: r.username, password: this.deps.keys.decrypt(r.sealed!), prefix: shopPrefix(r.companySlug, r.shopSlug) });
      } catch (err) {
        this.deps.log.error({ err, username: r.username }, 'broker login: the stored secret cannot be opened');
      }
    }
    return out;
  }

  /** A new broker secret: the clear text (handed to the shop PC once) and its sealed form for the database. */
  newSecret(): { secret: string; sealed: string } {
    const secret = randomBytes(24).toString('base64url');
    return { secret, sealed: this.deps.keys.encrypt(secret) };
  }

  /**
   * Registration check, run inside the transaction that stores a login: throws BrokerRefused when the broker cannot
   * take logins now, which rolls the transaction back.
   */
  assertAccepting(): void {
    if (!this.deps.broker.accepting) throw new BrokerRefused('the MQTT broker is closed or not reachable');
  }

  /**
   * A new password for a login (enrolment), after the row change is committed: the earlier password stops working
   * and its connections end. A broker that does not take it now gets it again later (Broker.setLogin); logged.
   */
  async activate(login: ShopLogin): Promise<void> {
    this.scopes.delete(login.username);
    try {
      await this.deps.broker.setLogin(login);
    } catch (err) {
      this.deps.log.error({ err, username: login.username }, 'the broker has not taken the new shop login yet (retried)');
    }
  }

  /**
   * Ends a login: forgets its scope, and the broker refuses it and closes its connections (`remove`: the shop is
   * gone). Call after the row change is committed. Resolves to the connections closed, where the broker says.
   */
  async end(username: string, opts: { remove: boolean }): Promise<number | undefined> {
    this.scopes.delete(username);
    return this.deps.broker.endLogin(username, opts);
  }
}

/**
 * Company deletion, after images: removes every shop login of the company (secret and shop-PC token cleared, so
 * nothing can reconnect while the rows wait to be deleted) and closes their connections.
 */
export function shopLoginsPurger(store: Store, logins: ShopLogins): CompanyPurger {
  return {
    name: 'broker_logins',
    failure: { status: 502, code: 'broker_unavailable', message: "The shops' broker logins could not be removed, so nothing was deleted. Try again." },
    async purge(companyId) {
      const rows = await store.db.select({ id: shops.id, username: shops.brokerUsername }).from(shops).where(eq(shops.companyId, companyId));
      if (rows.length === 0) return 0;
      await store.tx(async () => {
        (await store.db
          .update(shops)
          .set({ brokerSecret: null, agentTokenHash: null })
          .where(
            inArray(
              shops.id,
              rows.map((r) => r.id),
            ),
          ));
      });
      // An external broker that refuses the change fails the deletion (502 broker_unavailable) before any row is
      // deleted; one that cannot be reached gets the change when head office reconnects (Broker.endLogin).
      for (const r of rows) await logins.end(r.username, { remove: true });
      return rows.length;
    },
  };
}
