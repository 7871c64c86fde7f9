import type { Logger } from 'pino';
import type { UpName } from '../../shared/topics.js';
import type { Config } from '../config.js';

/**
 * Head office's MQTT broker, behind one interface with two implementations:
 *
 * - embedded.ts: aedes inside the process (the default, nothing to install). It asks head office (BrokerAuth) who
 *   may connect, publish and subscribe, and holds a visit's PUBACK inside its publish authorisation;
 * - external-mosquitto.ts: a Mosquitto 2 that the operator runs (FOOTFALL_MQTT_URL). Head office is one of its
 *   clients: it pushes each shop PC's login and per-shop ACL to the dynamic-security plugin, and its ingest session
 *   acknowledges a visit to the broker only once it is stored (docs/decisions.md, "An external broker").
 *
 * Everything else in head office (ingest, heartbeats, notices, logins) talks to this interface only.
 */

/**
 * Head office's shop logins. The embedded broker asks who may connect, publish and subscribe; an external broker
 * decides by itself, and is brought in line with `logins()` (every enrolled shop PC's login) on each connect.
 */
export interface BrokerAuth {
  authenticate(username: string, password: string): Promise<boolean> | boolean;
  canPublish(username: string, topic: string): boolean;
  canSubscribe(username: string, topic: string): boolean;
  logins(): Promise<ShopLogin[]>;
}

/** One shop PC's broker login: its username, password and topic prefix (`ff/<company>/<shop>/`). */
export interface ShopLogin {
  username: string;
  password: string;
  prefix: string;
}

/** A message handed to a holdAcks handler. */
export interface HeldMessage {
  topic: string;
  payload: Buffer;
}

/** The address shop PCs connect to (the enrolment answer's `broker`). */
export interface PublicAddress {
  /** null: the same host name as head office's HTTP address. */
  host: string | null;
  port: number;
  tls: boolean;
}

export interface Broker {
  readonly kind: 'embedded' | 'external';
  /** Where shop PCs connect. */
  readonly publicAddress: PublicAddress;
  /** The embedded broker's listening port; the external broker's public port. */
  readonly port: number;
  /** Whether the broker takes logins and messages now (embedded: not closed; external: head office is connected). */
  readonly accepting: boolean;
  /** Shop PCs connected now, where the broker says (embedded: counted; external: undefined). */
  readonly connectedClients: number | undefined;
  /** The embedded broker asks this who may do what; an external broker creates what it lacks of `auth.logins()`. */
  setAuth(auth: BrokerAuth): void;
  /** Connections logged in as this username now (embedded: counted, one closing still counts until it is gone;
   * external: undefined, the broker does not say). */
  connections(username: string): number | undefined;
  /**
   * Holds the acknowledgement of every `ff/<company>/<shop>/up/<name>` message until `handler` resolves, so a
   * message is acknowledged only once it is stored. A rejection has it sent again (embedded: the publish is refused,
   * which closes the shop PC's connection; external: head office's ingest session reconnects without acknowledging,
   * and the broker delivers it again). Returns the function that removes the hold.
   */
  holdAcks(name: UpName, handler: (message: HeldMessage) => Promise<void>): () => void;
  /**
   * Listens (QoS 0) to a filter, e.g. every shop's heartbeats. Resolves, once subscribed, to the unsubscribe.
   * `shared`: one head-office process of several gets each message (an external broker's shared subscription), for
   * what one process writes for all (heartbeats); the embedded broker serves one process, so it is the same there.
   */
  listen(filter: string, handler: (message: HeldMessage) => void, opts?: { shared?: boolean }): Promise<() => Promise<void>>;
  /** Publishes from head office (notices). Rejects if the broker did not take it. */
  publish(topic: string, payload: Buffer, opts: { qos: 0 | 1; retain: boolean }): Promise<void>;
  /**
   * Makes `login` valid with exactly its own topic rule (publish under `<prefix>up/`, subscribe under
   * `<prefix>down/`), replacing an earlier password; connections still using the earlier one are ended.
   * Embedded: nothing to do (it reads the shops table). External: the dynamic-security plugin's role and client.
   */
  setLogin(login: ShopLogin): Promise<void>;
  /**
   * Ends a login: it no longer authenticates and its connections are closed. `remove`: the shop is gone (external:
   * its client and role are deleted); otherwise it is disabled. Resolves to the connections closed, where known.
   */
  endLogin(username: string, opts: { remove: boolean }): Promise<number | undefined>;
  close(): Promise<void>;
}

/** Opens the broker the configuration names: FOOTFALL_MQTT_URL set, the external one; else the embedded one. */
export async function openBroker(config: Config, log: Logger): Promise<Broker> {
  if (config.FOOTFALL_MQTT_URL) {
    const { connectExternalBroker } = await import('./external-mosquitto.js');
    return connectExternalBroker(config, log);
  }
  const { startEmbeddedBroker } = await import('./embedded.js');
  return startEmbeddedBroker({ host: config.FOOTFALL_MQTT_HOST, port: config.FOOTFALL_MQTT_PORT, log });
}
