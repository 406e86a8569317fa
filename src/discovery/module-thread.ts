/**
 * Discovery modules in a worker thread: the `ModuleRunner` a server or worker process uses when it has
 * a core to spare (SIGHTLINE_DISCOVERY_THREAD). The thread (module-thread-entry.ts) builds the same
 * modules and runs each task it is sent with a throttle of its own — the only one in the process doing
 * network work, so the politeness limits hold as they do in one thread. This side keeps the store:
 * product look-ups in the vulnerability database come back here, and everything the modules found is
 * staged by the engine here, as before.
 *
 * Should the thread die, its tasks in flight fail (and are retried like any failed task) and the next
 * task starts a new thread.
 */
import { Worker } from "node:worker_threads";
import { setBounded } from "../core/bounded-map.ts";
import type { CveLookup } from "./fingerprint/fingerprint.ts";
import type { ModuleOutput, ModuleRunner, ModuleTask, RunDescription } from "./module-run.ts";

/** What the thread needs to build its modules as this process builds them. */
export interface ModuleThreadOptions {
  /** SIGHTLINE_IP_DATABASE and the data folder, for the IP look-ups of the netblocks module. */
  ipDatabase: string[];
  dataDir: string;
  /** The installed fingerprint rules, beside the built-in ones. */
  fingerprintRules?: string;
  /** Where the fingerprint and web modules check products (the store's vulnerability database). */
  cves?: CveLookup;
}

/** Messages to the thread. */
export type ToThread =
  | { type: "run"; run: RunDescription }
  | { type: "task"; id: number; runId: number; task: ModuleTask }
  | { type: "abort"; id: number }
  | { type: "forget"; runId: number }
  | { type: "cves"; id: number; matched?: Awaited<ReturnType<CveLookup["matchCpe"]>>; error?: string };

/** Messages from the thread. */
export type FromThread =
  /**
   * `output` is the ModuleOutput as JSON text: V8's JSON.stringify is several times cheaper than the
   * structured clone postMessage would make of the object (1.5 s of a /20's discovery thread), and
   * the parse lands on this side, which has time to spare while the thread is the busy one.
   */
  | { type: "done"; id: number; output?: string; error?: string }
  /**
   * A part of an answer's found entities, as JSON text, sent before its "done" when it found more than
   * FOUND_PART: a zone transfer's 65,000 records parsed at once held the server's loop 90 ms.
   */
  | { type: "found"; id: number; found: string }
  | { type: "cves"; id: number; cpe: string };

/** Found entities of an answer sent (and parsed on the server's thread) per message at most. */
export const FOUND_PART = 2_000;

/**
 * Runs described to the thread at once, at most. Both sides keep them in a map bounded by this, set in
 * the order the descriptions are sent, so they forget the same ones (runs that fail never reach
 * `forget`); a run forgotten while it goes on is described again with its next task.
 */
export const DESCRIBED_RUNS = 64;

/**
 * The thread's young generation. V8 sizes it from the machine's memory (64 MB of new space on a 24 GB
 * machine), and the thread's short-lived garbage (responses, template variables) then fills all of it
 * between collections, and the process's peak RSS grows by hundreds of MB at a large run. 12 MB (two 4 MB
 * semi-spaces, as `--max-semi-space-size=4` gives the main thread, see bin/sightline.js) keeps it small at
 * the same speed.
 */
const YOUNG_GENERATION_MB = 12;

interface Pending {
  /** What the answer's "found" messages brought, parsed in turns of their own. */
  found?: ModuleOutput["found"];
  resolve(output: ModuleOutput): void;
  reject(error: Error): void;
  signal: AbortSignal;
  onAbort(): void;
}

export class ModuleThread implements ModuleRunner {
  readonly #options: ModuleThreadOptions;
  #worker: Worker | undefined;
  /** Runs the current thread has been described (the thread keeps the same ones). */
  readonly #described = new Map<number, true>();
  readonly #pending = new Map<number, Pending>();
  /** Answers that came back and wait for their turn (see `#deliver`). */
  readonly #arrived: Array<() => void> = [];
  #nextId = 1;

  constructor(options: ModuleThreadOptions) {
    this.#options = options;
  }

  run(task: ModuleTask, run: RunDescription, signal: AbortSignal): Promise<ModuleOutput> {
    if (signal.aborted) return Promise.resolve({ found: [], issues: [], notes: [], error: "aborted" });
    const worker = this.#thread();
    if (!this.#described.has(run.id)) {
      worker.postMessage({ type: "run", run } satisfies ToThread);
      setBounded(this.#described, run.id, true, DESCRIBED_RUNS);
    }
    const id = this.#nextId++;
    return new Promise<ModuleOutput>((resolve, reject) => {
      const onAbort = () => worker.postMessage({ type: "abort", id } satisfies ToThread);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, { resolve, reject, signal, onAbort });
      if (this.#pending.size === 1) worker.ref();
      worker.postMessage({ type: "task", id, runId: run.id, task } satisfies ToThread);
    });
  }

  /** Whether a thread is up (for tests: it ends when the last run is forgotten). */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  /**
   * The run has no more tasks. With `release`, when no other run is described and no task is in flight,
   * the thread is ended: its heap, its compiled modules and its type stripper go back before a large
   * run's finish makes a thread of its own (run-results.ts), so the two threads' heaps are never held at
   * once and the finish is not the run's peak of memory; the next task starts a new one. Without it (a small run, finished on the server's thread), the thread stays
   * for the next run.
   */
  forget(runId: number, options: { release?: boolean } = {}): void {
    if (!this.#described.delete(runId)) return;
    const worker = this.#worker;
    if (!options.release || this.#described.size > 0 || this.#pending.size > 0) {
      worker?.postMessage({ type: "forget", runId } satisfies ToThread);
      return;
    }
    this.#worker = undefined;
    void worker?.terminate();
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#described.clear();
    const closed = new Error("the discovery thread was closed");
    for (const [id, pending] of this.#pending) this.#settle(id, pending, () => pending.reject(closed));
    if (worker) await worker.terminate();
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const { cves, ...data } = this.#options;
    const worker = new Worker(new URL("./module-thread-entry.ts", import.meta.url), {
      workerData: data,
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    worker.unref();
    worker.on("message", (message: FromThread) => this.#message(worker, message));
    const lost = (why: string) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#described.clear();
      const error = new Error(`the discovery thread stopped (${why}); the task is retried`);
      for (const [id, pending] of this.#pending) this.#settle(id, pending, () => pending.reject(error));
    };
    worker.on("error", (error) => lost(error.message));
    worker.on("exit", (code) => lost(`exit code ${code}`));
    this.#worker = worker;
    return worker;
  }

  #message(worker: Worker, message: FromThread): void {
    if (message.type === "cves") {
      const lookup = this.#options.cves;
      const answer = (reply: Partial<Extract<ToThread, { type: "cves" }>>) =>
        worker.postMessage({ type: "cves", id: message.id, ...reply } satisfies ToThread);
      if (!lookup) answer({ matched: [] });
      else
        lookup.matchCpe(message.cpe).then(
          (matched) => answer({ matched }),
          (error: Error) => answer({ error: error.message }),
        );
      return;
    }
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    if (message.type === "found") {
      const part = message.found;
      this.#deliver(() => {
        const found = JSON.parse(part) as ModuleOutput["found"];
        if (pending.found) pending.found.push(...found);
        else pending.found = found;
      });
      return;
    }
    const { output, error } = message;
    this.#settle(message.id, pending, () =>
      this.#deliver(() => {
        if (output === undefined) return pending.reject(new Error(error));
        try {
          const answer = JSON.parse(output) as ModuleOutput;
          if (pending.found) {
            pending.found.push(...answer.found);
            answer.found = pending.found;
          }
          pending.resolve(answer);
        } catch (parsing) {
          pending.reject(parsing as Error);
        }
      }),
    );
  }

  /**
   * The thread's answers come in bursts, all handled in one turn of the loop, and each goes on to the
   * engine and the store, whose statements are synchronous on SQLite: handled together, a burst at a
   * run's start holds the server's thread for hundreds of milliseconds. Each answer is delivered in a turn
   * of its own, so requests and timers are served between two. A time slice of deliveries per turn is not
   * enough: an answer's work goes on in the microtasks after its delivery (the engine's and the store's
   * awaited statements), so a slice that starts several answers runs all their work in one turn.
   */
  #deliver(answer: () => void): void {
    this.#arrived.push(answer);
    if (this.#arrived.length === 1) setImmediate(this.#deliverOne);
  }

  readonly #deliverOne = (): void => {
    this.#arrived.shift()?.();
    if (this.#arrived.length > 0) setImmediate(this.#deliverOne);
  };

  #settle(id: number, pending: Pending, settle: () => void): void {
    this.#pending.delete(id);
    pending.signal.removeEventListener("abort", pending.onAbort);
    if (this.#pending.size === 0) this.#worker?.unref();
    settle();
  }
}
