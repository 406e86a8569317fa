/**
 * The TCP prober of one scan: runs its turns with the native engine (native-probes.ts) when it is
 * given one, else with Node's sockets (tcp-connect.ts). Aborting the
 * signal ends the turns in flight at once (a port that had connected still counts as open); a turn
 * asked for after that probes nothing.
 *
 * The native engine only connects: an open port whose greeting is to be read is connected to again,
 * within the same turn (so on the same throttle slot), by the JS engine in this thread, which reads
 * it. Such ports are few (web and TLS ports are never waited on); should the second connection fail,
 * the port is still open, without a greeting.
 */
import { type NativeProbes, NativeState } from "./native-probes.ts";
import { ConnectProbes, type PortState, type ProbeTurn, type TurnOutcome } from "./tcp-connect.ts";

export type { PortState, ProbeTurn, TurnOutcome } from "./tcp-connect.ts";

const OPEN: PortState = { open: true };
const NATIVE_STATES: Array<PortState | undefined> = [];
NATIVE_STATES[NativeState.timeout] = { open: false, reason: "timeout" };
NATIVE_STATES[NativeState.error] = { open: false, reason: "error" };

export class TcpProber {
  readonly #signal: AbortSignal;
  /** Node's sockets: every probe without the native engine, and with it the greetings. */
  readonly #here = new ConnectProbes();
  readonly #native: NativeProbes | undefined;
  readonly #pending = new Set<number>();
  readonly #nativePending = new Set<number>();
  #nextId = 1;
  readonly #onAbort = () => {
    for (const id of this.#nativePending) this.#native?.cancel(id);
    for (const id of this.#pending) this.#here.cancel(id);
  };

  constructor(options: { signal: AbortSignal; native?: NativeProbes }) {
    this.#signal = options.signal;
    this.#native = options.native;
    this.#signal.addEventListener("abort", this.#onAbort, { once: true });
  }

  run(turn: ProbeTurn): Promise<TurnOutcome> {
    if (this.#signal.aborted || turn.ports.length === 0) return Promise.resolve({ probed: 0, answers: [] });
    if (this.#native) return this.#runNative(this.#native, turn);
    return this.#runJs(turn);
  }

  close(): void {
    this.#signal.removeEventListener("abort", this.#onAbort);
  }

  #runJs(turn: ProbeTurn): Promise<TurnOutcome> {
    return new Promise((resolve) => {
      const done = (outcome: TurnOutcome) => {
        this.#pending.delete(id);
        resolve(outcome);
      };
      const id = this.#nextId++;
      this.#pending.add(id);
      this.#here.run(id, turn, done);
    });
  }

  async #runNative(native: NativeProbes, turn: ProbeTurn): Promise<TurnOutcome> {
    const id = this.#nextId++;
    this.#nativePending.add(id);
    let states: Uint8Array;
    try {
      states = await native.probe(id, turn.host, Uint16Array.from(turn.ports), turn.timeoutMs, turn.turnMs);
    } finally {
      this.#nativePending.delete(id);
    }
    const answers: TurnOutcome["answers"] = [];
    const greet: number[] = [];
    let probed = 0;
    for (; probed < states.length && states[probed] !== NativeState.notProbed; probed++) {
      const state = states[probed];
      if (state === NativeState.open) {
        if (turn.bannerMs[probed] > 0) greet.push(probed);
        else answers.push({ port: turn.ports[probed], state: OPEN });
      } else {
        const closed = NATIVE_STATES[state];
        if (closed) answers.push({ port: turn.ports[probed], state: closed });
      }
    }
    if (greet.length > 0) {
      const greetings = new Map<number, PortState>();
      if (!this.#signal.aborted) {
        const again = await this.#runJs({
          ...turn,
          ports: greet.map((i) => turn.ports[i]),
          bannerMs: greet.map((i) => turn.bannerMs[i]),
          turnMs: Number.POSITIVE_INFINITY,
        });
        for (const { port, state } of again.answers) if (state.open) greetings.set(port, state);
      }
      for (const i of greet)
        answers.push({ port: turn.ports[i], state: greetings.get(turn.ports[i]) ?? OPEN });
    }
    return { probed, answers };
  }
}
