/**
 * The TCP connect probe engine: does anything accept on host:port, and, for a service that speaks
 * first, what does it say. A scan makes tens of thousands of probes, most refused at once, so the cost
 * per probe is what matters: one socket and no closure, timer or listener of its own per probe (a
 * subclass of Socket carries the probe's state, shared handlers read it from `this`, one sweep
 * enforces every deadline), and only `connect` and `error` listened to until a port answers.
 *
 * Work comes in turns (`ProbeTurn`): the ports one throttle slot probes one after another before the
 * slot goes back to the throttle. The engine runs in whichever thread calls it: the scan's own
 * (tcp-prober.ts) or a probe thread (tcp-probe-pool.ts).
 */
import { Socket } from "node:net";

export type PortState =
  | { open: true; greeting?: Buffer }
  | { open: false; reason: "closed" | "timeout" | "error" };

/** What one throttle slot does before it is handed back: some ports of one host, one at a time. */
export interface ProbeTurn {
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
  next = 0;
  current: ProbeSocket | undefined;
  cancelled = false;

  constructor(turn: ProbeTurn, done: (outcome: TurnOutcome) => void) {
    this.turn = turn;
    this.#done = done;
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

/** A socket that is also its probe's record, so the shared handlers below need no closure. */
class ProbeSocket extends Socket {
  readonly engine: ConnectProbes;
  readonly run: TurnRun;
  readonly port: number;
  readonly bannerMs: number;
  deadline: number;
  connected = false;
  settled = false;

  constructor(engine: ConnectProbes, run: TurnRun, index: number, now: number) {
    super();
    this.engine = engine;
    this.run = run;
    this.port = run.turn.ports[index];
    this.bannerMs = run.turn.bannerMs[index];
    this.deadline = now + run.turn.timeoutMs;
  }
}

function onConnect(this: ProbeSocket) {
  this.connected = true;
  if (this.bannerMs <= 0) return this.engine.settle(this, OPEN);
  this.deadline = performance.now() + this.bannerMs;
  // Listening for data puts the stream in flowing mode, work a refused port (most of them) never needs.
  this.on("data", onData);
  this.on("close", onClose);
}

function onError(this: ProbeSocket, error: NodeJS.ErrnoException) {
  this.engine.settle(this, this.connected ? OPEN : error.code === "ECONNREFUSED" ? CLOSED : FAILED);
}

function onClose(this: ProbeSocket) {
  this.engine.settle(this, this.connected ? OPEN : CLOSED);
}

// A greeting is written in one go (a line, or a binary handshake such as MySQL's): the first segment is it.
function onData(this: ProbeSocket, chunk: Buffer) {
  // A buffer of its own (not a slice of Node's shared pool), so it crosses threads as just these bytes.
  const greeting = Buffer.allocUnsafeSlow(Math.min(chunk.length, this.run.turn.bannerBytes));
  chunk.copy(greeting);
  this.engine.settle(this, { open: true, greeting });
}

/** The turns and probes in flight in one thread. */
export class ConnectProbes {
  readonly #turns = new Map<number, TurnRun>();
  readonly #inFlight = new Set<ProbeSocket>();
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
    const socket = run.current;
    if (socket) this.settle(socket, socket.connected ? OPEN : FAILED);
  }

  settle(socket: ProbeSocket, state: PortState): void {
    if (socket.settled) return;
    socket.settled = true;
    this.#inFlight.delete(socket);
    // An open port is left with a reset, as nmap does: no FIN exchange, no TIME_WAIT kept on our side.
    if (socket.connected && !socket.destroyed) socket.resetAndDestroy();
    else socket.destroy();
    const { run } = socket;
    if (state !== CLOSED) run.answers.push({ port: socket.port, state });
    const now = performance.now();
    if (run.goOn(now)) this.#start(run, now);
    else {
      if (this.#inFlight.size === 0) this.#stopSweep();
      run.finish();
    }
  }

  #start(run: TurnRun, now: number): void {
    const socket = new ProbeSocket(this, run, run.next++, now);
    run.current = socket;
    this.#inFlight.add(socket);
    this.#watchDeadlines(run.turn.timeoutMs);
    socket.on("connect", onConnect);
    socket.on("error", onError);
    socket.connect(socket.port, run.turn.host);
  }

  /** One interval for all deadlines, a tenth of the shortest timeout (10–100 ms), while any probe is out. */
  #watchDeadlines(timeoutMs: number): void {
    const tick = Math.max(10, Math.min(100, Math.floor(timeoutMs / 10)));
    if (this.#sweep && tick >= this.#tick) return;
    this.#stopSweep();
    this.#tick = tick;
    this.#sweep = setInterval(() => {
      const now = performance.now();
      const late = [...this.#inFlight].filter((socket) => socket.deadline <= now);
      if (late.length === 0) return;
      // Timers run before I/O in an event-loop turn: after a stall, a connect or a greeting may be
      // waiting to be read. Let that I/O in first, so a busy thread does not call an open port silent.
      setImmediate(() => {
        for (const socket of late)
          if (socket.deadline <= now) this.settle(socket, socket.connected ? OPEN : TIMEOUT);
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
