/**
 * MQTT topics between head office and a shop PC (docs/agent-protocol.md). Every topic of a shop lives under
 *
 *   ff/<company-slug>/<shop-slug>/
 *
 * with `up/...` for what the shop PC publishes and `down/...` for what head office publishes. Slugs are lower-case
 * letters, digits and single dashes, so they never contain MQTT's `/`, `+` or `#`.
 *
 * The broker enforces it: a shop PC may publish only under its own `<prefix>up/` and subscribe only under its
 * own `<prefix>down/`. Anything else is refused (a refused publish closes the connection; a refused subscription
 * gets the SUBACK failure code 0x80).
 */

export const TOPIC_ROOT = 'ff';

/** A slug as a topic segment: never `/`, `+`, `#` (same rule as company and shop slugs). */
export const topicSegment = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Topics the shop PC publishes (relative to the shop's prefix). */
export const UP = {
  /** Heartbeat, every `heartbeat_interval_s`. QoS 0, not retained. */
  heartbeat: 'up/heartbeat',
  /** One visit (the visits issue ingests it). QoS 1, not retained; keep it queued until the PUBACK. */
  visit: 'up/visit',
  /** One body crossing a camera's counting line (entry or exit). QoS 1, not retained; queued on disk like a visit. */
  crossing: 'up/crossing',
  /** Goodbye (additive): a clean stop says it before disconnecting; also the connection's last will. QoS 1, not retained. */
  goodbye: 'up/goodbye',
} as const;

/** Topics head office publishes (relative to the shop's prefix). */
export const DOWN = {
  /** cameras_changed: pull GET /api/agent/cameras now. QoS 1, retained (the latest one is there on connect). */
  cameras: 'down/cameras',
  /** check_requested: claim with POST /api/agent/checks/claim now. QoS 1, not retained. */
  check: 'down/check',
  /** live: someone is (or stopped) watching a camera. QoS 0, not retained, renewed every few seconds. */
  live: 'down/live',
} as const;

export type UpName = keyof typeof UP;
export type DownName = keyof typeof DOWN;

function segment(value: string, what: string): string {
  if (!topicSegment.test(value)) throw new Error(`${what} "${value}" is not a valid topic segment`);
  return value;
}

/** `ff/<company>/<shop>/` (with the trailing slash). */
export function shopPrefix(companySlug: string, shopSlug: string): string {
  return `${TOPIC_ROOT}/${segment(companySlug, 'company slug')}/${segment(shopSlug, 'shop slug')}/`;
}

export function upTopic(companySlug: string, shopSlug: string, name: UpName): string {
  return shopPrefix(companySlug, shopSlug) + UP[name];
}

export function downTopic(companySlug: string, shopSlug: string, name: DownName): string {
  return shopPrefix(companySlug, shopSlug) + DOWN[name];
}

/** What a shop PC subscribes to: everything head office sends it. */
export function downFilter(companySlug: string, shopSlug: string): string {
  return shopPrefix(companySlug, shopSlug) + 'down/#';
}

/** What head office subscribes to for one kind of upward message from every shop: `ff/+/+/up/<name>`. */
export function upFilterAllShops(name: UpName): string {
  return `${TOPIC_ROOT}/+/+/${UP[name]}`;
}

/** The broker username of a shop: `<company-slug>.<shop-slug>` (neither slug contains a dot). */
export function brokerUsername(companySlug: string, shopSlug: string): string {
  return `${segment(companySlug, 'company slug')}.${segment(shopSlug, 'shop slug')}`;
}

export interface ParsedTopic {
  companySlug: string;
  shopSlug: string;
  direction: 'up' | 'down';
  /** The known message name, or undefined for a topic this contract does not define. */
  name: UpName | DownName | undefined;
  /** Everything after `<prefix>`, e.g. `up/heartbeat`. */
  rest: string;
}

/** Splits a concrete topic (no wildcards) into its parts; undefined when it is not a Footfall shop topic. */
export function parseTopic(topic: string): ParsedTopic | undefined {
  const parts = topic.split('/');
  if (parts.length < 5 || parts[0] !== TOPIC_ROOT) return undefined;
  const [, companySlug, shopSlug, direction] = parts as [string, string, string, string];
  if (!topicSegment.test(companySlug) || !topicSegment.test(shopSlug)) return undefined;
  if (direction !== 'up' && direction !== 'down') return undefined;
  const rest = parts.slice(3).join('/');
  const table: Record<string, string> = direction === 'up' ? UP : DOWN;
  const name = Object.keys(table).find((k) => table[k] === rest) as UpName | DownName | undefined;
  return { companySlug, shopSlug, direction, name, rest };
}

/** Whether `topic` is a shop's `up/<name>` topic (`ff/<company>/<shop>/up/<name>`, valid slugs). */
export function isUpTopic(topic: string, name: UpName): boolean {
  const t = parseTopic(topic);
  return t?.direction === 'up' && t.name === name;
}
