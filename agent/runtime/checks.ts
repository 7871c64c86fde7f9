/**
 * Camera checks requested by a manager (docs/agent-protocol.md 2.5): claimed with POST /api/agent/checks/claim on a
 * `check_requested` notice, on every broker (re)connection and every `camera_sync_s`; each job runs on its own and
 * is answered with POST /api/agent/checks/{check}/answer.
 *
 * - `connection`: open the stream with a one-shot ffmpeg (grabFrame), read one picture within a few seconds, close
 *   it. The picture goes with the answer (it becomes the camera's snapshot).
 * - `placement`: watch the camera's frames for `seconds` with the recognition engine and count faces and the share
 *   too poor to use: good under 20%, marginal under 50%, poor from 50%, no_faces when nobody was seen. The `reason`
 *   tells the person next to the camera what to change ("Faces are too small: move the camera closer to the door or
 *   zoom in."). Without recognition the answer says so instead of pretending.
 */
import type { Logger } from 'pino';
import type { CameraConfig, CheckAnswer, CheckJob, Verdict } from '../../shared/agent-api.js';
import type { FrameConsumer } from '../capture/frame.js';
import { grabFrame } from '../capture/grab.js';
import type { CaptureManager } from '../capture/manager.js';
import type { ReasonCode } from '../capture/reasons.js';
import type { CameraSync } from './cameras.js';
import { AgentHttpError, type AgentApi } from './http.js';
import { pictureJpeg } from './picture.js';
import type { Cause, ProbeResult, Recognition } from './recognition.js';

/** What the shop PC concluded, as answered (and kept for logs and tests). */
export interface CheckOutcome {
  check_id: string;
  camera_id: string;
  kind: CheckJob['kind'];
  verdict: Verdict;
  /** One sentence for the person next to the camera. */
  headline: string;
  /** What to do about it (may be empty). */
  advice: string;
  detail: { faces: number; fraction_below_gate: number | null };
  /** Whether head office took the answer. */
  answered: boolean;
  ms: number;
}

export interface CheckRunnerOptions {
  api: AgentApi;
  capture: CaptureManager;
  sync: CameraSync;
  recognition: () => Recognition;
  /** Borrow a camera's frames (by camera_id) while a placement check runs; returns the function that stops. */
  tap: (cameraId: string, consumer: FrameConsumer) => () => void;
  log: Logger;
  ffmpegPath?: string;
  /** Connection check: a picture within this long; default 10 s. */
  grabTimeoutMs?: number;
  /** Placement check: wait this long for the camera's stream to open; default 15 s. */
  connectWaitMs?: number;
}

/** Placement thresholds (docs/agent-protocol.md): under 20% below the gate is good, under 50% marginal. */
export function placementVerdict(faces: number, below: number): Verdict {
  if (faces === 0) return 'no_faces';
  const f = below / faces;
  return f < 0.2 ? 'good' : f < 0.5 ? 'marginal' : 'poor';
}

const CAUSE_WORDS: Record<Cause, { headline: string; advice: string }> = {
  size: { headline: 'Faces are too small', advice: 'move the camera closer to the door or zoom in.' },
  sharpness: { headline: 'Faces are blurred', advice: 'focus the camera and clean the lens; more light on the faces reduces motion blur.' },
  pose: { headline: 'Faces are turned away from the camera', advice: 'aim it along the path people walk, at about head height.' },
  detector: { headline: 'Faces are hard to make out', advice: 'add light on the faces and avoid a bright window behind people.' },
};

/** Headline and advice of a placement check, written for the person standing next to the camera. */
export function placementWords(result: Pick<ProbeResult, 'faces' | 'below' | 'causes' | 'frames'>, seconds: number): { headline: string; advice: string } {
  const { faces, below } = result;
  if (faces === 0) {
    return {
      headline: `Nobody was seen in ${seconds} seconds (${result.frames} pictures looked at).`,
      advice: 'Walk through the entrance towards the camera during the check, and make sure the camera points at the entrance.',
    };
  }
  const pct = Math.round((below / faces) * 100);
  if (placementVerdict(faces, below) === 'good') {
    return { headline: `Faces are seen well: ${faces} faces, ${pct}% too poor to use.`, advice: '' };
  }
  const worst = (Object.entries(result.causes) as [Cause, number][]).sort((a, b) => b[1] - a[1])[0]![0];
  const words = CAUSE_WORDS[worst];
  return { headline: `${words.headline}: ${pct}% of ${faces} faces were too poor to use.`, advice: `${words.advice[0]!.toUpperCase()}${words.advice.slice(1)}` };
}

/** A camera problem (capture's reason word) as a check verdict. */
export function verdictForCamera(code: ReasonCode): Verdict {
  switch (code) {
    case 'auth_failed':
      return 'auth_failed';
    case 'unreachable':
    case 'timeout':
    case 'connecting':
      return 'unreachable';
    case 'no_stream':
    case 'decode_error':
      return 'no_stream';
    default:
      return 'failed';
  }
}

function sentence(text: string): string {
  const t = text.trim();
  if (!t) return t;
  return t[0]!.toUpperCase() + t.slice(1) + (/[.!?]$/.test(t) ? '' : '.');
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** A check cut short by the agent stopping. */
class CheckStopped extends Error {}

export class CheckRunner {
  private readonly opts: CheckRunnerOptions;
  private readonly log: Logger;
  private claiming: Promise<void> | undefined;
  private claimAgain = false;
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;
  /** Ends the checks' one-shot ffmpegs at shutdown (each holds a private folder with the camera's password). */
  private readonly abort = new AbortController();
  readonly outcomes: CheckOutcome[] = [];

  constructor(options: CheckRunnerOptions) {
    this.opts = options;
    this.log = options.log;
  }

  /** Claims jobs until there are none and starts each. Concurrent calls share one claim loop. */
  claimAll(): Promise<void> {
    if (this.claiming) {
      this.claimAgain = true;
      return this.claiming;
    }
    const loop = async () => {
      do {
        this.claimAgain = false;
        for (let n = 0; n < 100 && !this.stopped; n++) {
          let job: CheckJob | null;
          try {
            job = await this.opts.api.claimCheck();
          } catch (err) {
            this.log.debug({ err: (err as Error).message }, 'checks not claimed');
            return;
          }
          if (!job) break;
          this.start(job);
        }
      } while (this.claimAgain && !this.stopped);
    };
    this.claiming = loop().finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  /** Waits for the checks in progress (a shutdown gives them `ms` at most). */
  async stop(ms = 2000): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await Promise.race([Promise.allSettled([...this.running.values()]), sleep(ms)]);
  }

  get active(): number {
    return this.running.size;
  }

  private start(job: CheckJob): void {
    if (this.running.has(job.check_id)) return;
    const p = this.run(job)
      .catch((err: unknown) => {
        if (err instanceof CheckStopped) this.log.info({ check_id: job.check_id }, 'check stopped by shutdown, not answered');
        else this.log.error({ err, check_id: job.check_id }, 'check failed');
      })
      .finally(() => this.running.delete(job.check_id));
    this.running.set(job.check_id, p);
  }

  private async run(job: CheckJob): Promise<void> {
    const started = Date.now();
    this.log.info({ check_id: job.check_id, camera: job.camera_id, kind: job.kind, seconds: job.seconds }, 'check started');
    let camera = this.opts.sync.find(job.camera);
    if (!camera) {
      await this.opts.sync.pull();
      camera = this.opts.sync.find(job.camera);
    }
    let result: { answer: CheckAnswer; headline: string; advice: string };
    if (!camera) {
      result = this.words('not_set_up', 'This shop PC does not have this camera yet.', 'It picks up new cameras within a minute while it is online; check again then.');
    } else if (job.kind === 'connection') {
      result = await this.connection(camera);
    } else {
      result = await this.placement(camera, job.seconds ?? 10);
    }
    const answered = await this.answer(job, result.answer);
    const outcome: CheckOutcome = {
      check_id: job.check_id,
      camera_id: job.camera_id,
      kind: job.kind,
      verdict: result.answer.verdict,
      headline: result.headline,
      advice: result.advice,
      detail: result.answer.detail,
      answered,
      ms: Date.now() - started,
    };
    this.outcomes.push(outcome);
    if (this.outcomes.length > 50) this.outcomes.shift();
    this.log.info({ check_id: job.check_id, camera: job.camera_id, kind: job.kind, verdict: outcome.verdict, headline: outcome.headline, answered, ms: outcome.ms }, 'check done');
  }

  private words(verdict: Verdict, headline: string, advice: string, extra: Partial<CheckAnswer> = {}) {
    const reason = [headline, advice].filter(Boolean).join(' ').slice(0, 300);
    const answer: CheckAnswer = { verdict, detail: { faces: 0, fraction_below_gate: null }, ...extra, ...(reason ? { reason } : {}) };
    return { answer, headline, advice };
  }

  private async connection(camera: CameraConfig) {
    const grab = await grabFrame(
      { host: camera.host, port: camera.port, path: camera.path, username: camera.username, password: camera.password },
      this.opts.grabTimeoutMs ?? 10_000,
      { maxWidth: camera.max_width, signal: this.abort.signal, ...(this.opts.ffmpegPath ? { ffmpegPath: this.opts.ffmpegPath } : {}) },
    );
    // Stopped by a shutdown: no verdict to give; head office releases the check and it can be asked again.
    if (this.stopped) throw new CheckStopped();
    if (!grab.ok) {
      return this.words(verdictForCamera(grab.code), sentence(grab.reason), '');
    }
    const jpeg = await pictureJpeg(grab.image, { width: 640, quality: 80, rotate: camera.tuning.rotate });
    const secs = (grab.ms / 1000).toFixed(1);
    return this.words('good', `The stream opens: a picture ${grab.image.width}x${grab.image.height} arrived in ${secs} s.`, '', { image: jpeg.toString('base64') });
  }

  private async placement(camera: CameraConfig, seconds: number) {
    if (!camera.enabled) {
      return this.words('failed', 'This camera is switched off in head office.', 'Switch it on, then run the check again.');
    }
    const deadline = Date.now() + (this.opts.connectWaitMs ?? 15_000);
    let worker = this.opts.capture.worker(camera.id);
    while (!worker?.state.connected && Date.now() < deadline && !this.stopped) {
      await sleep(200);
      worker = this.opts.capture.worker(camera.id);
    }
    if (!worker?.state.connected) {
      const state = worker?.state;
      return state
        ? this.words(verdictForCamera(state.code), sentence(state.reason ?? state.code), '')
        : this.words('not_set_up', 'This shop PC has not started this camera yet.', 'Check again in a minute.');
    }

    const recognition = this.opts.recognition();
    const probe = recognition.probe();
    let frames = 0;
    const untap = this.opts.tap(camera.camera_id, (frame) => {
      frames++;
      probe?.consume(frame);
    });
    try {
      await sleep(seconds * 1000);
    } finally {
      untap();
    }
    const seen = probe ? await probe.finish() : undefined;
    const latest = worker.latest();
    const image = latest ? (await pictureJpeg(latest, { width: 640, quality: 80 })).toString('base64') : undefined;
    const withImage = image ? { image } : {};

    if (!seen) {
      return this.words(
        'failed',
        `Face recognition is not running on this shop PC (${recognition.problem ?? 'no face models'}), so faces could not be counted.`,
        `The camera sent ${frames} pictures in ${seconds} s.`,
        withImage,
      );
    }
    const verdict = placementVerdict(seen.faces, seen.below);
    const words = placementWords(seen, seconds);
    return this.words(verdict, words.headline, words.advice, {
      ...withImage,
      detail: { faces: Math.min(seen.faces, 1_000_000), fraction_below_gate: seen.faces ? seen.below / seen.faces : null },
    });
  }

  /** Answers, retrying while head office is unreachable until the check's release time. */
  private async answer(job: CheckJob, answer: CheckAnswer): Promise<boolean> {
    const releaseAt = Date.parse(job.release_at);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.opts.api.answerCheck(job.check_id, answer);
        return true;
      } catch (err) {
        const retry = err instanceof AgentHttpError && err.retryable;
        if (!retry || this.stopped || Date.now() + 1000 > releaseAt) {
          this.log.warn({ check_id: job.check_id, err: (err as Error).message }, 'check answer not accepted; dropped');
          return false;
        }
        await sleep(Math.min(30_000, 1000 * 2 ** attempt));
      }
    }
  }
}
