/**
 * Capped exponential backoff with jitter: the n-th wait is a random time between half and all of
 * min(maxMs, initialMs x 2^n), so many cameras that fail together (a switch reboots) do not retry in lock-step.
 */
export interface BackoffOptions {
  /** First wait, default 1 s. */
  initialMs?: number;
  /** Longest wait, default 30 s. */
  maxMs?: number;
  /** For tests: a source of numbers in [0, 1). */
  random?: () => number;
}

export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 1000;
    this.maxMs = Math.max(this.initialMs, options.maxMs ?? 30_000);
    this.random = options.random ?? Math.random;
  }

  /** The next wait in milliseconds; each call doubles the ceiling until maxMs. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}
