/**
 * The TCP connect probe engine: does anything accept on host:port, and, for a service that speaks
 * first, what does it say. A scan makes tens of thousands of probes, most refused at once, so the cost
 * per probe is what matters.
 *
 * A probe connects with Node's own TCP handle (`process.binding("tcp_wrap")`, the object `net.Socket`
 * drives underneath) and becomes a `net.Socket` only once a port has answered and its greeting is to be
 * read. A refused port then costs the kernel's socket, connect and close and one callback; through
 * `net.Socket` it also cost a stream, its event emitter, an Error with its stack and several ticks, which
 * made a scan spend more CPU in JavaScript than in the kernel (see bench/ports.ts). The binding is
 * deprecated in documentation only (DEP0111) and is still how Node's own `net` module connects; the
 * project pins its Node, and should a later one drop it, loading this module throws and every port
 * test fails.
 *
 * No closure, timer or listener per probe: the connect request carries the probe, one shared callback
 * reads it, and one sweep enforces every deadline.
 *
 * Work comes in turns (`ProbeTurn`): the ports one throttle slot probes one after another before the
 * slot goes back to the throttle. The engine runs in whichever thread calls it: the scan's own
 * (tcp-prober.ts) or a probe thread (tcp-probe-pool.ts).
 */
import { isIPv6, type SocketConstructorOpts as NetSocketOptions, Socket } from "node:net";
import { constants } from "node:os";

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

/** Node's TCP handle: the calls lib/net.js makes on it that a probe needs. */
interface TcpHandle {
  connect(request: ConnectRequest, address: string, port: number): number;
  connect6(request: ConnectRequest, address: string, port: number): number;
  /** Closes with a reset (SO_LINGER 0); a non-zero answer is an error code and nothing was done. */
  reset(): number;
  close(): void;
}

/** A connect request; libuv calls `oncomplete` with 0 or a negative error code. */
interface ConnectRequest {
  oncomplete: (status: number, handle: TcpHandle, request: ConnectRequest) => void;
  probe: Probe;
}

interface TcpBinding {
  TCP: new (type: number) => TcpHandle;
  TCPConnectWrap: new () => ConnectRequest;
  constants: { SOCKET: number };
}

const {
  TCP,
  TCPConnectWrap,
  constants: tcpConstants,
} = (process as unknown as { binding(name: "tcp_wrap"): TcpBinding }).binding("tcp_wrap");
const REFUSED = -constants.errno.ECONNREFUSED;

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
  readonly connect: TcpHandle["connect"];
  next = 0;
  current: Probe | undefined;
  cancelled = false;

  constructor(turn: ProbeTurn, done: (outcome: TurnOutcome) => void) {
    this.turn = turn;
    this.#done = done;
    const handle = TCP.prototype;
    this.connect = isIPv6(turn.host) ? handle.connect6 : handle.connect;
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

/** One port being probed: a bare handle while connecting, a Socket while its greeting is awaited. */
class Probe {
  readonly engine: ConnectProbes;
  readonly run: TurnRun;
  readonly port: number;
  readonly bannerMs: number;
  readonly handle: TcpHandle;
  socket: Socket | undefined;
  deadline: number;
  connected = false;
  settled = false;

  constructor(engine: ConnectProbes, run: TurnRun, index: number, now: number) {
    this.engine = engine;
    this.run = run;
    this.port = run.turn.ports[index];
    this.bannerMs = run.turn.bannerMs[index];
    this.deadline = now + run.turn.timeoutMs;
    this.handle = new TCP(tcpConstants.SOCKET);
  }

  /** Lets go of the connection: an open port with a reset, as nmap does (no FIN exchange, no TIME_WAIT). */
  release(): void {
    if (this.socket) {
      if (!this.socket.destroyed) this.socket.resetAndDestroy();
    } else if (!this.connected || this.handle.reset() !== 0) this.handle.close();
  }
}

function onConnected(status: number, _handle: TcpHandle, request: ConnectRequest) {
  const { probe } = request;
  if (probe.settled) return; // cancelled or timed out while connecting: the close ends the request
  if (status !== 0) return probe.engine.settle(probe, status === REFUSED ? CLOSED : FAILED);
  probe.connected = true;
  if (probe.bannerMs <= 0) return probe.engine.settle(probe, OPEN);
  probe.deadline = performance.now() + probe.bannerMs;
  // The handle becomes a Socket, which starts reading (net.Socket adopts handles as child_process does).
  const socket = new Socket({ handle: probe.handle as unknown as NetSocketOptions["handle"] });
  probe.socket = socket;
  const settle = (state: PortState) => probe.engine.settle(probe, state);
  // A greeting is written in one go (a line, or a binary handshake such as MySQL's): the first segment is it.
  socket.on("data", (chunk: Buffer) => {
    // A buffer of its own (not a slice of Node's shared pool), so it crosses threads as just these bytes.
    const greeting = Buffer.allocUnsafeSlow(Math.min(chunk.length, probe.run.turn.bannerBytes));
    chunk.copy(greeting);
    settle({ open: true, greeting });
  });
  socket.on("error", () => settle(OPEN));
  socket.on("close", () => settle(OPEN));
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
    const request = new TCPConnectWrap();
    request.oncomplete = onConnected;
    request.probe = probe;
    const error = run.connect.call(probe.handle, request, run.turn.host, probe.port);
    // Refusals come back through the callback; an immediate error (no route, say) is settled on the
    // next tick, so a turn of failing ports does not recurse.
    if (error !== 0) setImmediate(() => this.settle(probe, FAILED));
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
