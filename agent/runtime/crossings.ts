/**
 * Crossings of the counting lines (agent/runtime/doors.ts) to the durable queue (agent/queue), which the Publisher
 * drains to `<prefix>up/crossing` with QoS 1, exactly like visits (agent/runtime/visits.ts): the queue carries any
 * topic, in order, at least once; head office de-duplicates on `crossing_id`, made here once and kept in the queued
 * payload so that a re-send carries the same id.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Logger } from 'pino';
import { CrossingMessage } from '../../shared/messages.js';
import { UP } from '../../shared/topics.js';
import type { Crossing } from '../bodies/types.js';
import type { DurableQueue } from '../queue/queue.js';

export interface CrossingSinkOptions {
  queue: DurableQueue;
  log: Pick<Logger, 'debug' | 'error'>;
  /** `ff/<company>/<shop>/`. */
  topicPrefix: string;
}

/** The wire form of a crossing (shared/messages.ts). */
export function crossingMessage(cameraId: string, crossing: Crossing, crossingId: string = uuidv7()): CrossingMessage {
  return {
    crossing_id: crossingId,
    occurred_at: crossing.at.toISOString(),
    camera_id: cameraId,
    direction: crossing.direction,
    track_id: crossing.trackId.slice(0, 64),
  };
}

export class CrossingSink {
  private readonly opts: CrossingSinkOptions;
  private readonly topic: string;
  private counters = { in: 0, out: 0, invalid: 0 };

  constructor(options: CrossingSinkOptions) {
    this.opts = options;
    this.topic = options.topicPrefix + UP.crossing;
  }

  /** Entries and exits queued since start, and crossings refused by the contract. */
  get stats(): { in: number; out: number; invalid: number } {
    return { ...this.counters };
  }

  /** Queues a crossing; returns once it is on disk (false when it was not queued). */
  submit(cameraId: string, crossing: Crossing): boolean {
    const parsed = CrossingMessage.safeParse(crossingMessage(cameraId, crossing));
    if (!parsed.success) {
      this.counters.invalid++;
      this.opts.log.error({ camera: cameraId, issues: parsed.error.issues.slice(0, 3) }, 'crossing does not match the contract; not sent');
      return false;
    }
    if (!this.opts.queue.open) {
      this.opts.log.error({ camera: cameraId, direction: crossing.direction }, 'crossing not queued: the queue is closed');
      return false;
    }
    try {
      this.opts.queue.enqueue(this.topic, JSON.stringify(parsed.data));
    } catch (err) {
      this.opts.log.error({ err, camera: cameraId }, 'crossing not queued');
      return false;
    }
    this.counters[crossing.direction]++;
    this.opts.log.debug({ crossing_id: parsed.data.crossing_id, camera: cameraId, direction: crossing.direction, track: crossing.trackId }, 'crossing queued');
    return true;
  }
}
