/**
 * The embedded queue: jobs run in this process, lowest priority number first (then first come), with at
 * most `taskConcurrency` jobs at once and at most `runConcurrency` runs in progress. A job that will
 * mostly wait on the network gives its slot back (`TaskSlot.release`) and runs among up to
 * `taskConcurrency × WAITING_JOBS_PER_SLOT` waiting jobs. Nothing here
 * survives the process; on start the coordinator rebuilds it from the store.
 */
import { eachPaced } from "../core/pace.ts";
import {
  Deferred,
  deferDelay,
  HandBack,
  type JobHandler,
  jobId,
  type QueueDepth,
  type RunJob,
  type RunQueue,
  retryDelay,
  type TaskSlot,
  untilDone,
} from "./queue.ts";

/**
 * Jobs that only wait (a port scan of an address that never answers waits its whole timeout) run beside
 * the task slots, up to this many per slot: the throttle's connection limits bound what they do on the
 * network, and the slots stay free for work that computes. With the default 8 slots that is 256 jobs,
 * more than the default connection bound (200), so the connections are what binds: at 8 per slot a
 * block of services that accept and never answer ran 64 at a time whatever the bound allowed.
 */
export const WAITING_JOBS_PER_SLOT = 32;

interface Entry {
  job: RunJob;
  id: string;
  seq: number;
  /** Failed attempts so far. */
  failures: number;
  /** Tries deferred by an outage in a row (they do not count as attempts). */
  deferrals: number;
  /** Counted among its run's jobs whose tasks are not done. */
  undone: boolean;
}

const before = (a: Entry, b: Entry) =>
  a.job.priority !== b.job.priority ? a.job.priority < b.job.priority : a.seq < b.seq;

/** A binary min-heap ordered by (priority, arrival). */
class EntryHeap {
  private items: Entry[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): Entry | undefined {
    return this.items[0];
  }

  push(entry: Entry): void {
    const items = this.items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): Entry | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let best = i;
        if (left < items.length && before(items[left], items[best])) best = left;
        if (right < items.length && before(items[right], items[best])) best = right;
        if (best === i) break;
        [items[i], items[best]] = [items[best], items[i]];
        i = best;
      }
    }
    return top;
  }

  /** Removes the entries that match; answers them. */
  remove(match: (entry: Entry) => boolean): Entry[] {
    const removed = this.items.filter(match);
    if (removed.length > 0) {
      const kept = this.items.filter((entry) => !match(entry));
      this.items = [];
      for (const entry of kept) this.push(entry);
    }
    return removed;
  }
}

export interface InProcessQueueOptions {
  taskConcurrency: number;
  runConcurrency: number;
  attempts: number;
  backoffMs: number;
  /** Where a job that could not be run or failed reports (never thrown: nothing may kill the process). */
  onError?(message: string): void;
}

export class InProcessQueue implements RunQueue {
  readonly kind = "in-process";
  readonly durable = false;
  readonly healthChecks = {};
  private readonly options: InProcessQueueOptions;
  private readonly starts = new EntryHeap();
  private readonly tasks = new EntryHeap();
  /** Ids waiting, backing off or running: an id enqueued again meanwhile is dropped. */
  private readonly known = new Set<string>();
  /** How many known jobs of each run have tasks not done (see `TaskSlot.taskDone`). */
  private readonly undoneOfRun = new Map<number, number>();
  /** Runs that hold a run slot: from their start job until the coordinator says they ended. */
  private readonly activeRuns = new Set<number>();
  private readonly inHand = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private handler: JobHandler | undefined;
  private running = 0;
  /** Jobs that gave their slot back to wait (see TaskSlot). */
  private waiting = 0;
  private seq = 0;
  private stopped = false;

  constructor(options: InProcessQueueOptions) {
    this.options = options;
  }

  async ready(): Promise<void> {}

  async enqueue(jobs: RunJob[]): Promise<void> {
    // Paced: a zone transfer's task queues 60,000 follow-ups at once. Each job is taken whole (known,
    // counted, pushed) in one step, so a yield between two leaves the queue consistent.
    await eachPaced(jobs, (job) => {
      const id = jobId(job);
      if (this.known.has(id)) return;
      this.known.add(id);
      // A start job does not hold its run open: the run has no tasks until it has planned them.
      const undone = job.kind === "task";
      const entry: Entry = { job, id, seq: this.seq++, failures: 0, deferrals: 0, undone };
      if (undone) this.countUndone(job.runId, 1);
      this.push(entry);
    });
    this.pump();
  }

  consume(handler: JobHandler): void {
    this.handler = handler;
    this.pump();
  }

  runEnded(runId: number): void {
    this.activeRuns.delete(runId);
    const ofRun = (entry: Entry) => entry.job.runId === runId;
    for (const entry of [...this.starts.remove(ofRun), ...this.tasks.remove(ofRun)]) this.forget(entry);
    this.pump();
  }

  holdsUndoneJobsOf(runId: number): boolean {
    return this.undoneOfRun.has(runId);
  }

  async depth(): Promise<QueueDepth> {
    return {
      waiting: this.starts.size + this.tasks.size,
      running: this.running + this.waiting,
      delayed: this.timers.size,
    };
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  async close(): Promise<void> {
    this.stop();
    await Promise.allSettled([...this.inHand]);
  }

  private countUndone(runId: number, change: 1 | -1): void {
    const count = (this.undoneOfRun.get(runId) ?? 0) + change;
    if (count > 0) this.undoneOfRun.set(runId, count);
    else this.undoneOfRun.delete(runId);
  }

  private taskDone(entry: Entry): void {
    if (!entry.undone) return;
    entry.undone = false;
    this.countUndone(entry.job.runId, -1);
  }

  private forget(entry: Entry): void {
    this.known.delete(entry.id);
    this.taskDone(entry);
  }

  private push(entry: Entry): void {
    if (entry.job.kind === "start") this.starts.push(entry);
    else {
      this.activeRuns.add(entry.job.runId);
      this.tasks.push(entry);
    }
  }

  /** The next job to run: the best task, or the best start when a run slot is free, whichever comes first. */
  private pick(): Entry | undefined {
    const task = this.tasks.peek();
    const start = this.activeRuns.size < this.options.runConcurrency ? this.starts.peek() : undefined;
    if (start && (!task || before(start, task))) {
      this.activeRuns.add(start.job.runId);
      return this.starts.pop();
    }
    return task ? this.tasks.pop() : undefined;
  }

  private pump(): void {
    while (!this.stopped && this.handler && this.running < this.options.taskConcurrency) {
      const entry = this.pick();
      if (!entry) return;
      this.running++;
      let released = false;
      const slot: TaskSlot = {
        taskDone: () => this.taskDone(entry),
        release: () => {
          if (released) return true;
          if (this.waiting >= this.options.taskConcurrency * WAITING_JOBS_PER_SLOT) return false;
          released = true;
          this.running--;
          this.waiting++;
          queueMicrotask(() => this.pump());
          return true;
        },
      };
      const done: Promise<void> = this.execute(this.handler, entry, slot)
        .catch((error) => this.report(`job ${entry.id}: ${(error as Error).message}`))
        .finally(() => {
          if (released) this.waiting--;
          else this.running--;
          this.inHand.delete(done);
          this.pump();
        });
      this.inHand.add(done);
    }
  }

  private async execute(handler: JobHandler, entry: Entry, slot: TaskSlot): Promise<void> {
    try {
      await handler.run(entry.job, slot);
      this.forget(entry);
    } catch (error) {
      // Handed back or stopping: the store still says what is left, and the next start resumes it.
      if (error instanceof HandBack || this.stopped) {
        this.forget(entry);
        return;
      }
      if (error instanceof Deferred) {
        entry.deferrals++;
        if (entry.deferrals === 1) this.report(`job ${entry.id} waits: ${error.message}`);
        this.later(entry, deferDelay(entry.deferrals));
        return;
      }
      entry.deferrals = 0;
      entry.failures++;
      if (entry.failures < this.options.attempts) {
        this.later(entry, retryDelay(this.options.backoffMs, entry.failures));
        return;
      }
      this.forget(entry);
      // Recording the failure needs the database: keep trying (in the background) until it answers.
      void untilDone(() => handler.failed(entry.job, error as Error), {
        stopped: () => this.stopped,
        onError: (failure, tries) => {
          if (tries === 1) this.report(`recording that job ${entry.id} failed waits: ${failure.message}`);
        },
      });
    }
  }

  private later(entry: Entry, delayMs: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.push(entry);
      this.pump();
    }, delayMs);
    this.timers.add(timer);
  }

  private report(message: string): void {
    this.options.onError?.(message);
  }
}
