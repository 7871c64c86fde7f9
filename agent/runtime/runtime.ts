/**
 * The shop PC at work (`footfall agent`): the glue between capture (agent/capture), recognition (agent/vision),
 * the durable queue (agent/queue) and head office (HTTP routes and the MQTT broker, docs/agent-protocol.md).
 *
 *   broker link ── notices ──> camera list pull / check claim / live demand
 *       │ heartbeats (QoS 0)         │                 │             │
 *       └── Publisher <── DurableQueue <── VisitSink <── Recognition <── CaptureManager (one ffmpeg per camera)
 *                                    ^                                   │ │ latest frames
 *                                    └── CrossingSink <── DoorCounting <─┘ │ (cameras with a counting line)
 *                                              snapshots, checks, live view ┘
 *
 * Everything runs on timers from the enrolment's `timing` (refreshed from GET /api/agent/me at start) and on
 * notices; a lost notice costs at most one polling interval.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { countingLineOf, recognisesFaces, type CameraConfig, type Timing } from '../../shared/agent-api.js';
import { Heartbeat, type DownMessage } from '../../shared/messages.js';
import { UP } from '../../shared/topics.js';
import type { BackoffOptions } from '../capture/backoff.js';
import type { Frame, FrameConsumer } from '../capture/frame.js';
import { CaptureManager, type CaptureManagerOptions } from '../capture/manager.js';
import { brokerHost, queueFile, type AgentConfig } from '../config/config.js';
import { Publisher } from '../queue/publisher.js';
import { DurableQueue } from '../queue/queue.js';
import type { Visit } from '../vision/types.js';
import type { BodyDetector } from '../bodies/types.js';
import { BrokerLink } from './broker.js';
import { CameraSync } from './cameras.js';
import { CheckRunner } from './checks.js';
import { CrossingSink } from './crossings.js';
import { DoorWindow } from './door-health.js';
import { DoorCounting, loadDefaultBodyDetector, type DoorCountingOptions } from './doors.js';
import { AgentApi, AgentHttpError } from './http.js';
import { LiveRelay } from './live.js';
import { createAgentLogger } from './log.js';
import { NullRecognition, loadRecognition, type Recognition } from './recognition.js';
import { Snapshots } from './snapshots.js';
import { agentVersion } from './version.js';
import { VisitSink } from './visits.js';

export interface AgentRuntimeOptions {
  config: AgentConfig;
  log?: Logger;
  /** Replaces values of the enrolment's timing (tests use short intervals). */
  timing?: Partial<Timing>;
  /** Face models folder; default `<data_dir>/models`; false: no recognition (frames are only counted). */
  modelsDir?: string | false;
  /**
   * Loads the person detector for cameras with a counting line (docs/body-counting.md); default the installed one
   * (agent/runtime/doors.ts). Needed only once a camera has a line; independent of the face models.
   */
  bodyDetector?: () => Promise<BodyDetector>;
  /** The person model's folder (`bodies.json`); default `modelsDir` when it is a folder, else `<data_dir>/models`. */
  bodyModelsDir?: string;
  /** Body counting settings (motion gating, tracker, line band), mostly for tests and benchmarks. */
  doors?: Pick<DoorCountingOptions, 'motion' | 'tracker' | 'line' | 'retryMs' | 'maxFps'>;
  /** Recognition worker threads; default the engine's. */
  visionWorkers?: number;
  /** Capture worker settings (watchdogs, backoff), mostly for tests. */
  capture?: CaptureManagerOptions['worker'];
  /** Broker reconnection; default 1 s doubling to 60 s. */
  brokerBackoff?: BackoffOptions;
  /** On stop, wait at most this long for queued visits to be acknowledged while connected; default 3 s. */
  drainMs?: number;
  /** Ask head office for the current timing and image setting at start (GET /api/agent/me); default true. */
  refreshIdentity?: boolean;
  /**
   * Stops the start-up wherever it is (SIGTERM while head office or the models are awaited): what was opened is
   * closed again, the queue file included, and `start()` rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

export class AgentRuntime {
  readonly config: AgentConfig;
  readonly log: Logger;
  readonly api: AgentApi;
  readonly queue: DurableQueue;
  readonly capture: CaptureManager;
  readonly broker: BrokerLink;
  readonly publisher: Publisher;
  readonly sync: CameraSync;
  readonly snapshots: Snapshots;
  readonly checks: CheckRunner;
  readonly live: LiveRelay;
  readonly visits: VisitSink;
  readonly crossings: CrossingSink;
  readonly doors: DoorCounting;
  readonly version = agentVersion();
  recognition: Recognition = new NullRecognition('starting up');
  timing: Timing;
  images: 'off' | 'local';
  private readonly opts: AgentRuntimeOptions;
  private readonly taps = new Map<string, Set<FrameConsumer>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private heartbeats = 0;
  private readonly doorWindow = new DoorWindow();

  private constructor(options: AgentRuntimeOptions, timing: Timing, images: 'off' | 'local', api: AgentApi, log: Logger, queue: DurableQueue) {
    const { config } = options;
    this.opts = options;
    this.config = config;
    this.log = log;
    this.api = api;
    this.timing = timing;
    this.images = images;

    this.queue = queue;
    // Enrolled again for another shop (footfall enrol --force, same data folder): the old shop's visits cannot go out.
    this.queue.discardOutside(config.broker.topic_prefix);
    this.broker = new BrokerLink({
      host: brokerHost(config),
      port: config.broker.port,
      ...(config.broker.tls ? { tls: true } : {}),
      username: config.broker.username,
      password: config.broker.password,
      clientId: config.broker.client_id,
      topicPrefix: config.broker.topic_prefix,
      log,
      ...(options.brokerBackoff ? { backoff: options.brokerBackoff } : {}),
    });
    this.publisher = new Publisher({ queue: this.queue, client: this.broker.client, log });
    this.visits = new VisitSink({ queue: this.queue, api, log, topicPrefix: config.broker.topic_prefix, images });
    this.crossings = new CrossingSink({ queue: this.queue, log, topicPrefix: config.broker.topic_prefix });
    const bodyModels = options.bodyModelsDir ?? (options.modelsDir === false ? undefined : options.modelsDir);
    this.doors = new DoorCounting({
      // Only cameras whose role counts the door (`door`, `both`; docs/shops-and-cameras.md "Camera roles").
      lineOf: (cameraId) => {
        const camera = this.enabledCamera(cameraId);
        return camera ? countingLineOf(camera.tuning) : undefined;
      },
      loadDetector: options.bodyDetector ?? (() => loadDefaultBodyDetector(config.data_dir, bodyModels)),
      onCrossing: (cameraId, crossing) => void this.crossings.submit(cameraId, crossing),
      log,
      maxFps: config.door_fps,
      ...options.doors,
    });
    this.capture = new CaptureManager({ consumer: this.consume, fps: config.detect_fps, ffmpegPath: config.ffmpeg_path, log, ...(options.capture ? { worker: options.capture } : {}) });
    this.snapshots = new Snapshots({ api, capture: this.capture, log, onUnknownCamera: () => void this.sync.pull() });
    this.sync = new CameraSync({
      api,
      capture: this.capture,
      log,
      cacheFile: path.join(config.data_dir, 'cameras.json'),
      site: config.site.id,
      onForget: (cameraId) => {
        this.recognition.forget(cameraId);
        this.doors.forget(cameraId);
      },
      onConnected: (camera) => this.snapshots.uploadSoon(camera),
      onApplied: (cameras, list) => {
        this.visits.setRecognition(list.recognition ?? 'all');
        this.recognition.setCountOnly(this.visits.countOnly); // the embedding model is not even run
        if (cameras.some((c) => c.enabled && countingLineOf(c.tuning))) this.doors.prepare();
        else this.doors.noLines();
        // A camera now counting the door only: its open face tracks end here, and no new ones start.
        for (const c of cameras) if (!recognisesFaces(c.tuning)) this.recognition.forget(c.camera_id);
      },
    });
    this.checks = new CheckRunner({
      api,
      capture: this.capture,
      sync: this.sync,
      recognition: () => this.recognition,
      tap: (cameraId, consumer) => this.tap(cameraId, consumer),
      log,
      ffmpegPath: config.ffmpeg_path,
    });
    this.live = new LiveRelay({ api, capture: this.capture, log, demandTtlMs: timing.live_demand_ttl_s * 1000 });
  }

  /**
   * Starts everything; resolves once the cameras of the known list are starting (head office may be unreachable).
   * The queue file is opened (and locked) first: a second agent on the same data folder is refused before anything
   * else. Aborted by `options.signal` at any point, it closes what it opened and rejects with the signal's reason.
   */
  static async start(options: AgentRuntimeOptions): Promise<AgentRuntime> {
    const { config, signal } = options;
    const log = options.log ?? createAgentLogger(config.log_level);
    signal?.throwIfAborted();
    // `dropped` is this shop's: a PC enrolled again for another shop does not report the first shop's losses.
    const queue = new DurableQueue({ file: queueFile(config), maxItems: config.queue_max_items, shop: config.site.id, log });
    let runtime: AgentRuntime;
    try {
      const api = new AgentApi({ serverUrl: config.server_url, token: config.token });
      let timing = config.timing;
      let images = config.images;
      if (options.refreshIdentity !== false) {
        try {
          const me = await new AgentApi({ serverUrl: config.server_url, token: config.token, timeoutMs: 5000 }).me(signal);
          timing = me.timing;
          images = me.images;
        } catch (err) {
          signal?.throwIfAborted();
          if (err instanceof AgentHttpError && err.status === 401) {
            log.error('head office no longer accepts this shop PC (enrolled again elsewhere, or the shop was removed): enrol it again with a new code (footfall enrol --force ...)');
          } else {
            log.warn({ problem: (err as Error).message }, 'head office not reached at start; using the timing from the configuration');
          }
        }
      }
      signal?.throwIfAborted();
      timing = { ...timing, ...options.timing };
      runtime = new AgentRuntime(options, timing, images, api, log, queue);
    } catch (err) {
      const left = queue.open ? queue.stats() : undefined;
      queue.close();
      if (signal?.aborted) log.info({ during: 'start-up', queue: left }, 'agent stopped');
      throw err;
    }
    // A stop asked for from here on: begin() returns at its next step, and stop() waits for it before closing.
    const onAbort = () => void runtime.stop().catch(() => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      runtime.starting = runtime.begin();
      await runtime.starting;
      signal?.throwIfAborted();
    } catch (err) {
      await runtime.stop().catch(() => undefined);
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return runtime;
  }

  /** The start-up after the queue is open; returns early (at its next step) once a stop is asked for. */
  private async begin(): Promise<void> {
    const { config } = this;
    this.log.info(
      {
        version: this.version,
        shop: config.site.name,
        company: config.company.name,
        server: config.server_url,
        broker: `${brokerHost(config)}:${config.broker.port}`,
        queue: this.queue.stats(),
        timing: this.timing,
        images: this.images,
      },
      'agent starting',
    );
    this.broker.on('connected', () => this.onBrokerConnected());
    this.broker.on('notice', (notice) => this.onNotice(notice));
    this.publisher.start();
    this.broker.start();

    const modelsDir = this.opts.modelsDir ?? path.join(config.data_dir, 'models');
    // Loaded models are kept even when a stop came meanwhile: shutdown() (which waits for this) closes them.
    this.recognition = await loadRecognition({
      modelsDir,
      log: this.log,
      faceImages: this.images === 'local',
      ...(this.opts.visionWorkers !== undefined ? { workers: this.opts.visionWorkers } : {}),
    });
    this.recognition.on('visit', (visit) => void this.visits.submit(visit));
    this.recognition.setCountOnly(this.visits.countOnly); // the mode from a camera list applied before the models loaded
    if (this.stopping) return;

    await this.sync.loadCache();
    if (this.stopping) return;
    void this.sync.pull().then(() => this.checks.claimAll());

    const every = (seconds: number, fn: () => void) => {
      const t = setInterval(fn, Math.max(0.2, seconds) * 1000);
      t.unref();
      this.timers.push(t);
    };
    every(this.timing.heartbeat_interval_s, () => this.sendHeartbeat());
    every(this.timing.camera_sync_s, () => {
      void this.sync.pull().then(() => this.sync.reportAll());
      void this.checks.claimAll();
    });
    every(this.timing.snapshot_interval_s, () => void this.snapshots.uploadAll(this.sync.cameras()));
    every(this.timing.live_renew_s, () => {
      if (!this.broker.connected) void this.live.poll();
    });
  }

  /** The frame consumer given to capture: recognition, body counting at the doors, plus whoever borrows a camera's frames (placement checks). */
  private readonly consume = (frame: Frame): void => {
    // A `door` camera runs no face pipeline at all: its faces would each become a visitor, and they cost CPU.
    const camera = this.enabledCamera(frame.cameraId);
    if (!camera || recognisesFaces(camera.tuning)) this.recognition.consume(frame);
    this.doors.consume(frame);
    const taps = this.taps.get(frame.cameraId);
    if (taps) for (const t of taps) t(frame);
  };

  /** The enabled camera of this camera_id in the last applied list. */
  private enabledCamera(cameraId: string): CameraConfig | undefined {
    return this.sync.cameras().find((c) => c.camera_id === cameraId && c.enabled);
  }

  /** Borrows a camera's frames (by camera_id) at its detect rate; returns the function that gives them back. */
  tap(cameraId: string, consumer: FrameConsumer): () => void {
    let set = this.taps.get(cameraId);
    if (!set) this.taps.set(cameraId, (set = new Set()));
    set.add(consumer);
    return () => {
      set.delete(consumer);
      if (set.size === 0 && this.taps.get(cameraId) === set) this.taps.delete(cameraId);
    };
  }

  /** A visit as the recognition pipeline makes it: queued durably, then published (tests inject visits here). */
  submitVisit(visit: Visit): Promise<void> {
    return this.visits.submit(visit);
  }

  /** The heartbeat as it would be sent now. */
  heartbeat(): Heartbeat {
    const { up, total } = this.sync.counts();
    const { queued, dropped } = this.queue.open ? this.queue.stats() : { queued: 0, dropped: 0 };
    const r = this.recognition;
    const gate = r.gate();
    const hb: Heartbeat = {
      sent_at: new Date().toISOString(),
      agent_version: this.version,
      recognition_model: r.model,
      recognition_running: r.running,
      cameras_up: Math.min(up, total),
      cameras_total: total,
      queued,
      dropped,
      fraction_below_gate: gate.fraction_below_gate,
    };
    if (r.problem) hb.recognition_problem = r.problem.slice(0, 300);
    if (this.doors.problem) hb.door_counting_problem = this.doors.problem.slice(0, 300);
    if (gate.worst_camera_id) hb.worst_camera_id = gate.worst_camera_id.slice(0, 64);
    const doors = this.doorWindow.report(this.doors.stats());
    if (doors.length > 0) hb.doors = doors;
    return hb;
  }

  /** Heartbeats published so far. */
  get heartbeatsSent(): number {
    return this.heartbeats;
  }

  private sendHeartbeat(): void {
    if (this.stopping || !this.broker.connected) return;
    const parsed = Heartbeat.safeParse(this.heartbeat());
    if (!parsed.success) {
      this.log.error({ issues: parsed.error.issues.slice(0, 3) }, 'heartbeat does not match the contract; not sent');
      return;
    }
    if (this.broker.publishNow(this.config.broker.topic_prefix + UP.heartbeat, JSON.stringify(parsed.data))) this.heartbeats++;
  }

  private onBrokerConnected(): void {
    if (this.stopping) return;
    this.sendHeartbeat();
    void this.sync.pull();
    void this.checks.claimAll();
  }

  private onNotice(notice: DownMessage): void {
    if (this.stopping) return;
    switch (notice.kind) {
      case 'cameras_changed':
        void this.sync.pull();
        break;
      case 'check_requested':
        void this.checks.claimAll();
        break;
      case 'live':
        this.live.onDemand(notice);
        break;
    }
  }

  /**
   * Graceful stop (SIGTERM): uploads and checks end, every ffmpeg is stopped, open tracks become visits, queued
   * visits get a moment to be acknowledged, the broker connection is closed and the queue file checkpointed.
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    const started = Date.now();
    this.log.info('agent stopping');
    // Stopped during start-up: the step under way ends first (models being loaded, the kept cameras starting).
    await this.starting?.catch(() => undefined);
    for (const t of this.timers) clearInterval(t);
    this.snapshots.stop();
    this.sync.stop();
    await Promise.allSettled([this.live.close(), this.checks.stop(1000)]);
    await this.capture.stopAll().catch((err: unknown) => this.log.error({ err }, 'cameras not stopped cleanly'));
    await this.recognition.close().catch((err: unknown) => this.log.error({ err }, 'recognition not closed cleanly'));
    await this.doors.close().catch((err: unknown) => this.log.error({ err }, 'body counting not closed cleanly'));
    await this.visits.settled();
    if (this.broker.connected && this.queue.open && this.queue.stats().queued > 0) {
      const drain = this.opts.drainMs ?? 3000;
      await Promise.race([this.publisher.idle(), new Promise((r) => setTimeout(r, drain).unref())]);
    }
    this.publisher.stop();
    await this.broker.stop().catch(() => undefined);
    const left = this.queue.open ? this.queue.stats() : undefined;
    this.queue.close();
    this.log.info({ ms: Date.now() - started, queue: left }, 'agent stopped');
  }
}
