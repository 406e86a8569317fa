/**
 * The TCP connect probe engine: does anything accept on host:port, and, for a service that speaks
 * first, what does it say. A scan makes tens of thousands of probes, most refused at once, so the cost
 * per probe is what matters.
 *
 * This is the engine that works wherever Node does: each probe is a `net.Socket`. Where `npm ci` built
 * the native engine (native-probes.ts), scans connect there, several times cheaper per refused port,
 * and this engine only reads the greetings of the few open ports that speak first (bench/ports.ts
 * measures both against nmap). One sweep enforces every deadline, not a timer per probe.
 *
 * Work comes in turns (`ProbeTurn`): the ports one throttle slot probes one after another before the
 * slot goes back to the throttle.
 */
import { isIPv6, Socket } from "node:net";

export type PortState =
  | { open: true; greeting?: Buffer }
  | { open: false; reason: "closed" | "timeout" | "error" };

/** What one throttle slot does before it is handed back: some ports of one host, one at a time. */
export interface ProbeTurn {
  /** An IPv4 or IPv6 address (ports are scanned per address; names are resolved before). */
  host: string;
  ports: number[];
  /** Greeting wait per port, parallel to `ports`; 0 = do not wait (web and TLS never speak first). */
  bannerMs: number[];
  /** Longest wait for a connection. */
  timeoutMs: number;
  /** How much of a greeting to keep. */
  bannerBytes: number;
  /**
   * No probe starts once the turn has run this long: the slot goes back to the throttle, so other
   * work waiting on the same host is not held up by a long run of slow ports. Loopback or LAN probes
   * take microseconds and fill a turn; on the internet a turn is one probe or a few.
   */
  turnMs: number;
}

export interface TurnOutcome {
  /** How many of the turn's ports were probed, from the first; the rest are for another turn. */
  probed: number;
  /** Every probed port that was not refused, with its state; the others were closed. */
  answers: Array<{ port: number; state: PortState }>;
}

const OPEN: PortState = { open: true };
const CLOSED: PortState = { open: false, reason: "closed" };
const TIMEOUT: PortState = { open: false, reason: "timeout" };
const FAILED: PortState = { open: false, reason: "error" };

/** A turn in progress. */
class TurnRun {
  readonly turn: ProbeTurn;
  readonly #done: (outcome: TurnOutcome) => void;
  readonly #startedAt = performance.now();
  readonly answers: TurnOutcome["answers"] = [];
  readonly family: 4 | 6;
  next = 0;
  current: Probe | undefined;
  cancelled = false;

  constructor(turn: ProbeTurn, done: (outcome: TurnOutcome) => void) {
    this.turn = turn;
    this.#done = done;
    this.family = isIPv6(turn.host) ? 6 : 4;
  }

  /** Whether another port may start on this slot. */
  goOn(now: number): boolean {
    return !this.cancelled && this.next < this.turn.ports.length && now - this.#startedAt < this.turn.turnMs;
  }

  finish(): void {
    this.current = undefined;
    this.#done({ probed: this.next, answers: this.answers });
  }
}

/** One port being probed, on a socket of its own. */
class Probe {
  readonly engine: ConnectProbes;
  readonly run: TurnRun;
  readonly port: number;
  readonly bannerMs: number;
  readonly socket = new Socket();
  deadline: number;
  connected = false;
  settled = false;

  constructor(engine: ConnectProbes, run: TurnRun, index: number, now: number) {
    this.engine = engine;
    this.run = run;
    this.port = run.turn.ports[index];
    this.bannerMs = run.turn.bannerMs[index];
    this.deadline = now + run.turn.timeoutMs;
  }

  /** Lets go of the connection: an open port with a reset, as nmap does (no FIN exchange, no TIME_WAIT). */
  release(): void {
    if (this.socket.destroyed) return;
    if (this.connected) this.socket.resetAndDestroy();
    else this.socket.destroy();
  }
}

function connect(probe: Probe): void {
  const { socket, run } = probe;
  const settle = (state: PortState) => probe.engine.settle(probe, state);
  socket.once("connect", () => {
    probe.connected = true;
    if (probe.bannerMs <= 0) return settle(OPEN);
    probe.deadline = performance.now() + probe.bannerMs;
  });
  // A greeting is written in one go (a line, or a binary handshake such as MySQL's): the first segment is it.
  socket.once("data", (chunk: Buffer) => {
    const greeting = Buffer.allocUnsafeSlow(Math.min(chunk.length, run.turn.bannerBytes));
    chunk.copy(greeting);
    settle({ open: true, greeting });
  });
  socket.on("error", (error: NodeJS.ErrnoException) => {
    if (probe.connected) settle(OPEN);
    else settle(error.code === "ECONNREFUSED" ? CLOSED : FAILED);
  });
  socket.once("close", () => settle(probe.connected ? OPEN : FAILED));
  socket.connect({ host: run.turn.host, port: probe.port, family: run.family });
}

/** The turns and probes in flight in one thread. */
export class ConnectProbes {
  readonly #turns = new Map<number, TurnRun>();
  readonly #inFlight = new Set<Probe>();
  #sweep: NodeJS.Timeout | undefined;
  #tick = Number.POSITIVE_INFINITY;

  /** Starts turn `id`; `done` is called once, when it ends (all probed, out of time, or cancelled). */
  run(id: number, turn: ProbeTurn, done: (outcome: TurnOutcome) => void): void {
    const run = new TurnRun(turn, (outcome) => {
      this.#turns.delete(id);
      done(outcome);
    });
    this.#turns.set(id, run);
    const now = performance.now();
    if (run.goOn(now)) this.#start(run, now);
    else run.finish();
  }

  /** Ends a turn now: the port in flight is open if it connected (it was waiting for a greeting). */
  cancel(id: number): void {
    const run = this.#turns.get(id);
    if (!run) return;
    run.cancelled = true;
    const probe = run.current;
    if (probe) this.settle(probe, probe.connected ? OPEN : FAILED);
  }

  settle(probe: Probe, state: PortState): void {
    if (probe.settled) return;
    probe.settled = true;
    this.#inFlight.delete(probe);
    probe.release();
    const { run } = probe;
    if (state !== CLOSED) run.answers.push({ port: probe.port, state });
    const now = performance.now();
    if (run.goOn(now)) this.#start(run, now);
    else {
      if (this.#inFlight.size === 0) this.#stopSweep();
      run.finish();
    }
  }

  #start(run: TurnRun, now: number): void {
    const probe = new Probe(this, run, run.next++, now);
    run.current = probe;
    this.#inFlight.add(probe);
    this.#watchDeadlines(run.turn.timeoutMs);
    // Refusals and errors come back as events, never synchronously, so a turn of failing ports does not recurse.
    connect(probe);
  }

  /** One interval for all deadlines, a tenth of the shortest timeout (10–100 ms), while any probe is out. */
  #watchDeadlines(timeoutMs: number): void {
    const tick = Math.max(10, Math.min(100, Math.floor(timeoutMs / 10)));
    if (this.#sweep && tick >= this.#tick) return;
    this.#stopSweep();
    this.#tick = tick;
    this.#sweep = setInterval(() => {
      const now = performance.now();
      const late = [...this.#inFlight].filter((probe) => probe.deadline <= now);
      if (late.length === 0) return;
      // Timers run before I/O in an event-loop turn: after a stall, a connect or a greeting may be
      // waiting to be read. Let that I/O in first, so a busy thread does not call an open port silent.
      setImmediate(() => {
        for (const probe of late)
          if (probe.deadline <= now) this.settle(probe, probe.connected ? OPEN : TIMEOUT);
      });
    }, tick);
    this.#sweep.unref();
  }

  #stopSweep(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
    this.#tick = Number.POSITIVE_INFINITY;
  }
}
