import { randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';

/**
 * Mosquitto 2's dynamic-security plugin, driven over its control topic: a message of commands on
 * `$CONTROL/dynamic-security/v1`, answered on `.../response` with one response per command (matched here by the
 * command's correlationData). See https://mosquitto.org/documentation/dynamic-security/.
 */
export const DYNSEC_TOPIC = '$CONTROL/dynamic-security/v1';
export const DYNSEC_RESPONSE_TOPIC = `${DYNSEC_TOPIC}/response`;

export type DynsecCommand = { command: string } & Record<string, unknown>;

export interface DynsecResponse {
  command: string;
  error?: string;
  data?: unknown;
}

/** A failed command (other than one the caller said it expects). */
export class DynsecError extends Error {}

interface Waiting {
  left: number;
  responses: (DynsecResponse | undefined)[];
  resolve: (r: DynsecResponse[]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class Dynsec {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly client: MqttClient,
    private readonly timeoutMs = 10_000,
  ) {
    client.on('message', (topic, payload) => {
      if (topic === DYNSEC_RESPONSE_TOPIC) this.onResponse(payload);
    });
  }

  /** Subscribes to the responses (call on every connect of a clean session). */
  async attach(): Promise<void> {
    const granted = await this.client.subscribeAsync(DYNSEC_RESPONSE_TOPIC, { qos: 1 });
    if (granted.some((g) => g.qos >= 0x80)) throw new DynsecError(`the broker refused the subscription to ${DYNSEC_RESPONSE_TOPIC}: head office's login must be a dynamic-security admin`);
  }

  /**
   * Runs the commands in one message, in order. An error on a command is thrown unless `tolerate` accepts it (e.g.
   * "already exists" when creating what may exist).
   */
  async run(commands: DynsecCommand[], tolerate: (response: DynsecResponse) => boolean = () => false): Promise<DynsecResponse[]> {
    const id = randomUUID();
    const responses = await new Promise<DynsecResponse[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new DynsecError(`the dynamic-security plugin did not answer within ${this.timeoutMs} ms (is it loaded? plugin .../mosquitto_dynamic_security.so)`));
      }, this.timeoutMs);
      this.waiting.set(id, { left: commands.length, responses: commands.map(() => undefined), resolve, reject, timer });
      const payload = JSON.stringify({ commands: commands.map((c, i) => ({ ...c, correlationData: `${id}:${i}` })) });
      this.client.publish(DYNSEC_TOPIC, payload, { qos: 1 }, (err) => {
        if (!err) return;
        clearTimeout(timer);
        this.waiting.delete(id);
        reject(err);
      });
    });
    const failed = responses.find((r) => r.error && !tolerate(r));
    if (failed) throw new DynsecError(`dynamic-security ${failed.command}: ${failed.error}`);
    return responses;
  }

  /** Rejects everything waiting (the connection is gone). */
  failAll(why: string): void {
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      w.reject(new DynsecError(why));
      this.waiting.delete(id);
    }
  }

  private onResponse(payload: Buffer): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString('utf8'));
    } catch {
      return;
    }
    const list = (parsed as { responses?: unknown }).responses;
    if (!Array.isArray(list)) return;
    for (const r of list as (DynsecResponse & { correlationData?: unknown })[]) {
      if (typeof r.correlationData !== 'string') continue;
      const [id, index] = r.correlationData.split(':');
      const w = id ? this.waiting.get(id) : undefined;
      const i = Number(index);
      if (!w || !Number.isInteger(i) || w.responses[i] !== undefined) continue;
      w.responses[i] = { command: r.command, ...(r.error ? { error: r.error } : {}), ...(r.data !== undefined ? { data: r.data } : {}) };
      if (--w.left === 0) {
        clearTimeout(w.timer);
        this.waiting.delete(id!);
        w.resolve(w.responses as DynsecResponse[]);
      }
    }
  }
}

/** "Client already exists", "Role already exists", "Role is already in client" and the like. */
export const alreadyDone = (r: DynsecResponse): boolean => /already/i.test(r.error ?? '');
/** "Client not found", "Role not found". */
export const notFound = (r: DynsecResponse): boolean => /not found/i.test(r.error ?? '');
