import { eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import { DownMessage } from '../../shared/messages.js';
import { downTopic, type DownName } from '../../shared/topics.js';
import type { Broker } from '../broker/broker.js';
import type { Db } from '../db/open.js';
import { one } from '../db/query.js';
import { companies, shops } from '../db/tables.js';

/** Where a shop's messages go: its company and shop slugs. */
export interface ShopAddress {
  companySlug: string;
  shopSlug: string;
}

export async function shopAddress(db: Db, shopId: string): Promise<ShopAddress | undefined> {
  return await one(db
    .select({ companySlug: companies.slug, shopSlug: shops.slug })
    .from(shops)
    .innerJoin(companies, eq(companies.id, shops.companyId))
    .where(eq(shops.id, shopId)));
}

const delivery: Record<DownName, { qos: 0 | 1; retain: boolean }> = {
  cameras: { qos: 1, retain: true },
  check: { qos: 1, retain: false },
  live: { qos: 0, retain: false },
};

/**
 * Publishes a notice to one shop PC (topics and QoS: docs/agent-protocol.md). Best effort: a shop PC that is not
 * connected learns the same thing by polling, so a failure is logged, never thrown.
 */
export function notifyShop(broker: Broker, log: Logger, to: ShopAddress, name: DownName, message: DownMessage): void {
  const payload = Buffer.from(JSON.stringify(DownMessage.parse(message)));
  const { qos, retain } = delivery[name];
  if (!broker.accepting) return;
  broker.publish(downTopic(to.companySlug, to.shopSlug, name), payload, { qos, retain }).catch((err: unknown) => {
    log.warn({ err, name, shop: to.shopSlug }, 'shop notice not published');
  });
}

/** Clears the shop's retained messages (a removed shop leaves nothing behind in the broker). */
export function clearRetained(broker: Broker, to: ShopAddress): void {
  if (!broker.accepting) return;
  for (const name of Object.keys(delivery) as DownName[]) {
    if (!delivery[name].retain) continue;
    broker.publish(downTopic(to.companySlug, to.shopSlug, name), Buffer.alloc(0), { qos: 0, retain: true }).catch(() => undefined);
  }
}
