/**
 * The tasks this process is executing, each with its abort signal. While any is in flight, the runs they
 * belong to are checked every `pollMs`: a run cancelled or failed elsewhere (another process, the API,
 * the time limit) aborts its tasks here. Shutdown aborts everything with a reason that says "hand back".
 */

/** Abort reason: the run is over (cancelled, failed, past its time limit); the task's work is dropped. */
export class RunEnded extends Error {
  readonly runId: number;
  constructor(runId: number, message: string) {
    super(message);
    this.name = "RunEnded";
    this.runId = runId;
  }
}

/** Abort reason: this process is stopping; the task goes back to the queue for another worker. */
export class ShuttingDown extends Error {
  constructor() {
    super("this process is shutting down");
    this.name = "ShuttingDown";
  }
}

export interface Lease {
  signal: AbortSignal;
  end(): void;
}

/** Answers, for the runs with tasks in flight, which must stop and why. */
export type RunWatch = (runIds: number[]) => Promise<RunEnded[]>;

export class InFlight {
  private readonly runs = new Map<number, Set<AbortController>>();
  private readonly watch: RunWatch;
  private readonly pollMs: number;
  private readonly onError: (error: Error) => void;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(options: { watch: RunWatch; pollMs: number; onError: (error: Error) => void }) {
    this.watch = options.watch;
    this.pollMs = options.pollMs;
    this.onError = options.onError;
  }

  get size(): number {
    let n = 0;
    for (const controllers of this.runs.values()) n += controllers.size;
    return n;
  }

  begin(runId: number): Lease {
    const controller = new AbortController();
    let controllers = this.runs.get(runId);
    if (!controllers) {
      controllers = new Set();
      this.runs.set(runId, controllers);
    }
    controllers.add(controller);
    this.schedulePoll();
    return {
      signal: controller.signal,
      end: () => {
        controllers.delete(controller);
        if (controllers.size === 0 && this.runs.get(runId) === controllers) this.runs.delete(runId);
        if (this.runs.size === 0) this.becameIdle();
      },
    };
  }

  abortRun(runId: number, reason: Error): void {
    for (const controller of this.runs.get(runId) ?? []) controller.abort(reason);
  }

  abortAll(reason: Error): void {
    for (const runId of this.runs.keys()) this.abortRun(runId, reason);
  }

  /** Resolves when nothing is in flight, or after `timeoutMs`, whichever is first. */
  drained(timeoutMs: number): Promise<void> {
    if (this.runs.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private becameIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  private schedulePoll(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      for (const ended of await this.watch([...this.runs.keys()])) this.abortRun(ended.runId, ended);
    } catch (error) {
      this.onError(error as Error);
    } finally {
      this.timer = undefined;
      if (this.runs.size > 0) this.schedulePoll();
    }
  }
}
