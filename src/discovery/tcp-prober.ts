/**
 * The TCP prober of one scan: runs its turns (tcp-connect.ts) in this thread, or on the probe threads
 * (tcp-probe-pool.ts) when the scan is large enough for the CPU to be what bounds it. Aborting the
 * signal ends the turns in flight at once (a port that had connected still counts as open); a turn
 * asked for after that probes nothing.
 */
import { ConnectProbes, type ProbeTurn, type TurnOutcome } from "./tcp-connect.ts";
import { probePool } from "./tcp-probe-pool.ts";

export type { PortState, ProbeTurn, TurnOutcome } from "./tcp-connect.ts";

export class TcpProber {
  readonly #signal: AbortSignal;
  /** This thread's engine; none when the turns go to the probe threads. */
  readonly #here: ConnectProbes | undefined;
  readonly #pending = new Set<number>();
  #nextId = 1;
  readonly #onAbort = () => {
    if (this.#here) for (const id of this.#pending) this.#here.cancel(id);
    else probePool().cancel(this.#pending);
  };

  constructor(options: { signal: AbortSignal; threads: boolean }) {
    this.#signal = options.signal;
    if (!options.threads) this.#here = new ConnectProbes();
    this.#signal.addEventListener("abort", this.#onAbort, { once: true });
  }

  run(turn: ProbeTurn): Promise<TurnOutcome> {
    if (this.#signal.aborted || turn.ports.length === 0) return Promise.resolve({ probed: 0, answers: [] });
    return new Promise((resolve) => {
      const done = (outcome: TurnOutcome) => {
        this.#pending.delete(id);
        resolve(outcome);
      };
      let id: number;
      if (this.#here) {
        id = this.#nextId++;
        this.#pending.add(id);
        this.#here.run(id, turn, done);
      } else {
        id = probePool().run(turn, done);
        this.#pending.add(id);
      }
    });
  }

  close(): void {
    this.#signal.removeEventListener("abort", this.#onAbort);
  }
}
