/**
 * Probe threads: a large scan's turns run on worker threads, one per core, each with its own event
 * loop. A scan is bound by the CPU spent creating, connecting and closing sockets (in the kernel and
 * in Node's socket machinery), and one event loop uses one core.
 *
 * Every limit stays with the caller: a turn is sent only once the throttle gave it a slot, and the
 * slot is held until the turn's outcome is back, so global and per-host concurrency and the rate hold
 * across threads without a budget of their own. Turns and outcomes travel in batches, one message per
 * event-loop turn each way. Until a thread has started (tens of milliseconds), turns run in the
 * calling thread instead of waiting.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { ConnectProbes, type PortState, type ProbeTurn, type TurnOutcome } from "./tcp-connect.ts";

/** Calling thread → probe thread. */
export type ToProbeThread =
  | { kind: "run"; turns: Array<{ id: number; turn: ProbeTurn }> }
  | { kind: "cancel"; ids: number[] };

/** Probe thread → calling thread (a greeting arrives as a Uint8Array). */
export type FromProbeThread =
  | { kind: "ready" }
  | { kind: "outcomes"; outcomes: Array<{ id: number; outcome: TurnOutcome }> };

/** Threads are let go after this long without work, so an idle service holds no extra isolates. */
const IDLE_MS = 30_000;
/**
 * At most this many threads: each is an isolate of its own (memory, start-up, JIT warm-up), and past a
 * few cores the default 200 connections in flight keep no more busy.
 */
const MAX_THREADS = 4;

/** Collects items and hands them over together once this event-loop turn's promise jobs have run. */
export class Batcher<T> {
  #items: T[] = [];
  readonly #send: (items: T[]) => void;

  constructor(send: (items: T[]) => void) {
    this.#send = send;
  }

  push(item: T): void {
    if (this.#items.push(item) === 1) setImmediate(() => this.flush());
  }

  /** Hands over what is collected now (nothing if it is empty). */
  flush(): void {
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    this.#send(items);
  }
}

class ProbeThread {
  readonly worker: Worker;
  ready = false;
  /** Turns sent and not answered. */
  outstanding = 0;
  readonly #turns = new Batcher<{ id: number; turn: ProbeTurn }>((turns) =>
    this.worker.postMessage({ kind: "run", turns } satisfies ToProbeThread),
  );

  constructor(script: URL, onMessage: (message: FromProbeThread) => void, onExit: () => void) {
    this.worker = new Worker(script);
    this.worker.on("message", onMessage);
    this.worker.on("error", onExit);
    this.worker.on("exit", onExit);
    this.worker.unref();
  }

  send(id: number, turn: ProbeTurn): void {
    if (this.outstanding++ === 0) this.worker.ref();
    this.#turns.push({ id, turn });
  }

  answered(count: number): void {
    this.outstanding -= count;
    if (this.outstanding === 0) this.worker.unref();
  }

  cancel(ids: number[]): void {
    this.#turns.flush(); // a turn still in the batch must reach the thread before its cancel
    this.worker.postMessage({ kind: "cancel", ids } satisfies ToProbeThread);
  }
}

/** Where a pending turn runs: a probe thread, or this thread while none has started. */
type Site = ProbeThread | "here";

export class ProbePool {
  readonly #size: number;
  readonly #script: URL;
  readonly #threads: ProbeThread[] = [];
  readonly #pending = new Map<number, { site: Site; done: (outcome: TurnOutcome) => void }>();
  #here: ConnectProbes | undefined;
  /** A thread died (it could not start, say): from then on every turn runs in this thread. */
  #broken = false;
  #nextId = 1;
  #idle: NodeJS.Timeout | undefined;

  constructor(options: { size?: number; script?: URL } = {}) {
    this.#size = Math.max(1, options.size ?? Math.min(MAX_THREADS, availableParallelism()));
    this.#script = options.script ?? new URL("./tcp-probe-thread.ts", import.meta.url);
  }

  /** How many probe threads the pool runs when busy. */
  get size(): number {
    return this.#size;
  }

  /** How many threads are up and take turns. */
  get readyThreads(): number {
    return this.#threads.filter((thread) => thread.ready).length;
  }

  /** Runs a turn on the least busy thread; `done` is called once. Answers the turn's id. */
  run(turn: ProbeTurn, done: (outcome: TurnOutcome) => void): number {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    const id = this.#nextId++;
    const site = this.#site();
    this.#pending.set(id, { site, done });
    if (site !== "here") site.send(id, turn);
    else {
      this.#here ??= new ConnectProbes();
      this.#here.run(id, turn, (outcome) => this.#answer(id, outcome));
    }
    return id;
  }

  /**
   * Starts the threads before the first turn — a run that will scan starts them while its first (DNS)
   * tasks go on, so its scans do not wait for them; unused, they are let go after IDLE_MS as ever.
   */
  warm(): void {
    if (this.#broken) return;
    while (this.#threads.length < this.#size) this.#spawn();
    if (this.#pending.size === 0) this.#letGoWhenIdle();
  }

  /** Ends turns now (the run was aborted); each is still answered, with what it found. */
  cancel(ids: Iterable<number>): void {
    const byThread = new Map<ProbeThread, number[]>();
    for (const id of ids) {
      const site = this.#pending.get(id)?.site;
      if (site === "here") this.#here?.cancel(id);
      else if (site) byThread.set(site, [...(byThread.get(site) ?? []), id]);
    }
    for (const [thread, list] of byThread) thread.cancel(list);
  }

  /** Lets the threads go (idle, or at shutdown); a later turn starts them again. */
  close(): void {
    clearTimeout(this.#idle);
    for (const thread of this.#threads.splice(0)) {
      this.#unanswered(thread);
      void thread.worker.terminate();
    }
  }

  /** The least busy started thread; this thread while none has started. Threads start on first use. */
  #site(): Site {
    if (this.#broken) return "here";
    while (this.#threads.length < this.#size) this.#spawn();
    let best: ProbeThread | undefined;
    for (const thread of this.#threads)
      if (thread.ready && (!best || thread.outstanding < best.outstanding)) best = thread;
    return best ?? "here";
  }

  #spawn(): void {
    const thread: ProbeThread = new ProbeThread(
      this.#script,
      (message) => {
        if (message.kind === "ready") thread.ready = true;
        else {
          thread.answered(message.outcomes.length);
          for (const { id, outcome } of message.outcomes) this.#answer(id, outcome);
        }
      },
      () => this.#lost(thread),
    );
    this.#threads.push(thread);
  }

  #answer(id: number, outcome: TurnOutcome): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    for (const answer of outcome.answers) answer.state = asBuffer(answer.state);
    pending.done(outcome);
    if (this.#pending.size === 0) this.#letGoWhenIdle();
  }

  #letGoWhenIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.close(), IDLE_MS);
    this.#idle.unref();
  }

  /**
   * A thread died, which it should not: its turns come back unprobed (the scan gives them to another
   * turn) and threads are not tried again, so a thread that cannot start is not restarted forever.
   */
  #lost(thread: ProbeThread): void {
    const index = this.#threads.indexOf(thread);
    if (index < 0) return; // closed
    this.#threads.splice(index, 1);
    this.#broken = true;
    this.#unanswered(thread);
  }

  #unanswered(thread: ProbeThread): void {
    for (const [id, pending] of this.#pending)
      if (pending.site === thread) this.#answer(id, { probed: 0, answers: [] });
  }
}

/** A greeting crosses threads as a Uint8Array; callers read it as a Buffer. */
function asBuffer(state: PortState): PortState {
  if (!state.open || !state.greeting || Buffer.isBuffer(state.greeting)) return state;
  const { buffer, byteOffset, byteLength } = state.greeting;
  return { open: true, greeting: Buffer.from(buffer, byteOffset, byteLength) };
}

let shared: ProbePool | undefined;

/** The process's probe threads, started on first use. */
export function probePool(): ProbePool {
  shared ??= new ProbePool();
  return shared;
}
