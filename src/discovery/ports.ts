/**
 * TCP connect scan of an address over the configured port list, with banner grabbing: an open port is
 * read for what the service says first, within a short bound (web and TLS ports are not waited on).
 * Every connection goes through the throttle (global and per-host concurrency, rate) and honours the
 * run's abort signal. Open ports become NetworkService entities named "1.2.3.4:22/tcp".
 */
import { isIPv6, Socket } from "node:net";
import type { DiscoveryModule } from "./module.ts";
import { identifyService, osFromBanner, SILENT_PORTS } from "./services.ts";

export type PortState =
  | { open: true; greeting?: Buffer }
  | { open: false; reason: "closed" | "timeout" | "error" };

interface Probe {
  deadline: number;
  connected: boolean;
  settle(state: PortState): void;
}

/**
 * Connect probes of one scan. Lean per probe, because a scan makes tens of thousands: one deadline
 * sweep and one abort listener for the whole scan instead of a timer and a listener per connection.
 */
export class TcpProber {
  readonly #inFlight = new Set<Probe>();
  readonly #timeoutMs: number;
  readonly #bannerMs: (port: number) => number;
  readonly #bannerBytes: number;
  readonly #signal: AbortSignal;
  readonly #sweep: NodeJS.Timeout;
  readonly #onAbort = () => {
    for (const probe of this.#inFlight)
      probe.settle(probe.connected ? { open: true } : { open: false, reason: "error" });
  };

  /**
   * `bannerMs`: how long to wait for a greeting on a port once connected (0: not at all); `bannerBytes`:
   * how much of it to keep. A service that never speaks, never stops or never closes costs no more.
   */
  constructor(options: {
    timeoutMs: number;
    bannerMs: (port: number) => number;
    bannerBytes: number;
    signal: AbortSignal;
  }) {
    this.#timeoutMs = options.timeoutMs;
    this.#bannerMs = options.bannerMs;
    this.#bannerBytes = options.bannerBytes;
    this.#signal = options.signal;
    this.#signal.addEventListener("abort", this.#onAbort, { once: true });
    const tick = Math.max(10, Math.min(100, Math.floor(options.timeoutMs / 10)));
    this.#sweep = setInterval(() => {
      const now = performance.now();
      for (const probe of this.#inFlight)
        if (probe.deadline <= now)
          probe.settle(probe.connected ? { open: true } : { open: false, reason: "timeout" });
    }, tick);
    this.#sweep.unref();
  }

  /** Connects once; answers whether the port is open and, for a service that speaks first, what it said. */
  probe(host: string, port: number): Promise<PortState> {
    if (this.#signal.aborted) return Promise.resolve({ open: false, reason: "error" });
    return new Promise((resolve) => {
      const socket = new Socket();
      const probe: Probe = {
        deadline: performance.now() + this.#timeoutMs,
        connected: false,
        settle: (state) => {
          if (!this.#inFlight.delete(probe)) return;
          socket.destroy();
          resolve(state);
        },
      };
      this.#inFlight.add(probe);
      socket.on("error", (error: NodeJS.ErrnoException) =>
        probe.settle(
          probe.connected
            ? { open: true }
            : { open: false, reason: error.code === "ECONNREFUSED" ? "closed" : "error" },
        ),
      );
      socket.on("close", () =>
        probe.settle(probe.connected ? { open: true } : { open: false, reason: "closed" }),
      );
      // A greeting is written in one go (a line, or a binary handshake such as MySQL's): the first segment is it.
      socket.on("data", (chunk: Buffer) =>
        probe.settle({ open: true, greeting: Buffer.from(chunk.subarray(0, this.#bannerBytes)) }),
      );
      socket.connect(port, host, () => {
        probe.connected = true;
        const bannerMs = this.#bannerMs(port);
        if (bannerMs <= 0) return probe.settle({ open: true });
        probe.deadline = performance.now() + bannerMs;
      });
    });
  }

  close(): void {
    clearInterval(this.#sweep);
    this.#signal.removeEventListener("abort", this.#onAbort);
  }
}

/** The entity name of a TCP service: "1.2.3.4:22/tcp", "[2001:db8::1]:443/tcp". */
export function serviceName(address: string, port: number): string {
  return `${servicePrefix(address)}${port}/tcp`;
}

/** What the names of an address's services start with: "1.2.3.4:", "[2001:db8::1]:". */
export const servicePrefix = (address: string) => `${isIPv6(address) ? `[${address}]` : address}:`;

/** The address and port a TCP service name stands for. */
export function parseServiceName(name: string): { address: string; port: number } | undefined {
  const match = /^\[?([^\]]+?)\]?:(\d+)\/tcp$/.exec(name);
  return match ? { address: match[1], port: Number(match[2]) } : undefined;
}

export const portScan: DiscoveryModule = {
  name: "ports",
  consumes: ["IpAddress"],
  produces: ["NetworkService"],
  async run(entity, ctx) {
    const address = entity.name;
    if (!ctx.mayTouch(address)) {
      ctx.note(
        `${address} was not port-scanned: the deny list covers it (allow it with SIGHTLINE_SCAN_ALLOW).`,
      );
      return;
    }
    const { ports, timeoutMs, perHostConcurrency, limits } = ctx.settings;
    // SSH, SMTP and FTP greet at once; a slow one still shows within the bound.
    const bannerMs = Math.min(limits.bannerTimeoutMs, timeoutMs);
    const prober = new TcpProber({
      timeoutMs,
      bannerMs: (port) => (SILENT_PORTS.has(port) ? 0 : bannerMs),
      bannerBytes: limits.bannerMaxBytes,
      signal: ctx.signal,
    });
    const open: number[] = [];
    let unanswered = 0;
    let next = 0;
    // A pool as wide as the per-host bound pulls ports in order: never more waiters than slots.
    const worker = async () => {
      while (next < ports.length && !ctx.signal.aborted) {
        const port = ports[next++];
        let state: PortState;
        try {
          state = await ctx.throttle.run(address, () => prober.probe(address, port), ctx.signal);
        } catch {
          return; // aborted while waiting for a slot
        }
        if (!state.open) {
          if (state.reason === "timeout") unanswered++;
          continue;
        }
        open.push(port);
        const { service, banner } = identifyService(port, state.greeting);
        ctx.emit({
          kind: "NetworkService",
          name: serviceName(address, port),
          details: { ip_address: address, port, protocol: "tcp", service, banner },
        });
        const os = osFromBanner(banner);
        if (os) ctx.emit({ kind: "IpAddress", name: address, details: { os } });
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(ports.length, perHostConcurrency) }, worker));
    } finally {
      prober.close();
    }
    ctx.emit({
      kind: "IpAddress",
      name: address,
      details: {
        scan: { ports_scanned: ports.length, open: open.sort((a, b) => a - b), filtered: unanswered },
      },
    });
  },
};
