/** Throttles for tests. */
import { Throttle } from "../../src/discovery/net/throttle.ts";

/** A throttle that records how many operations it let run at once, overall and per host. */
export class WatchedThrottle extends Throttle {
  runs = 0;
  peak = 0;
  hostPeak = 0;
  #now = 0;
  readonly #hosts = new Map<string, number>();

  override async run<T>(host: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return super.run(
      host,
      async () => {
        this.runs++;
        this.peak = Math.max(this.peak, ++this.#now);
        const onHost = (this.#hosts.get(host) ?? 0) + 1;
        this.#hosts.set(host, onHost);
        this.hostPeak = Math.max(this.hostPeak, onHost);
        try {
          return await work();
        } finally {
          this.#now--;
          this.#hosts.set(host, (this.#hosts.get(host) ?? 1) - 1);
        }
      },
      signal,
    );
  }
}
