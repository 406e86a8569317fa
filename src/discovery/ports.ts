/**
 * TCP connect scan of an address over the configured port list, with banner grabbing: an open port is
 * read for what the service says first, within a short bound (web and TLS ports are not waited on).
 * Every connection goes through the throttle (global and per-host concurrency, rate) and honours the
 * run's abort signal. Open ports become NetworkService entities named "1.2.3.4:22/tcp".
 */
import { isIPv6 } from "node:net";
import type { DiscoveryModule, DiscoverySettings } from "./module.ts";
import { type NativeProbes, nativeProbes } from "./native-probes.ts";
import { identifyService, osFromBanner, SILENT_PORTS } from "./services.ts";
import { probePool } from "./tcp-probe-pool.ts";
import { type PortState, TcpProber, type TurnOutcome } from "./tcp-prober.ts";

/** From this many ports a host's scan runs on the probe threads; a few ports are quicker in this thread. */
const THREADED_SCAN_PORTS = 256;
/** At most this many ports per throttle slot before it is handed back (see ProbeTurn). */
const PORTS_PER_TURN = 16;
/**
 * …and no port starts on a slot held this long. With a host's ports spread over many slots, work
 * waiting for one of them waits a fraction of this; a shorter bound only cuts turns short when the
 * machine is busy (the thread's own event loop is what makes a turn long on loopback).
 */
const TURN_MS = 250;

/**
 * The probe engine of a scan: the native one when it was built and the configuration allows it
 * (`probeEngine`: `auto`, the default, or `js`), unless a rate paces every connection — that scan is
 * slow by choice, and the JS engine reads a greeting on the connection that found the port instead of
 * a second one, so each connection keeps a slot of its own.
 */
export function nativeEngine(
  settings: Pick<DiscoverySettings, "probeEngine" | "rateLimit">,
  available: NativeProbes | undefined,
): NativeProbes | undefined {
  return settings.probeEngine === "js" || settings.rateLimit > 0 ? undefined : available;
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
  runStarting(settings) {
    // A run's scans come after its names are resolved: the probe threads start meanwhile.
    if (settings.ports.length >= THREADED_SCAN_PORTS && !nativeEngine(settings, nativeProbes))
      probePool().warm();
  },
  async run(entity, ctx) {
    const address = entity.name;
    if (!ctx.mayTouch(address)) {
      ctx.note(
        `${address} was not port-scanned: the deny list covers it (allow it with SIGHTLINE_SCAN_ALLOW).`,
      );
      return;
    }
    const { ports, timeoutMs, perHostConcurrency, rateLimit, limits } = ctx.settings;
    // SSH, SMTP and FTP greet at once; a slow one still shows within the bound.
    const bannerMs = Math.min(limits.bannerTimeoutMs, timeoutMs);
    const lanes = Math.min(ports.length, perHostConcurrency);
    // A turn takes a share of the host's ports, so every lane has work; one port when a rate paces each connection.
    const perTurn =
      rateLimit > 0 ? 1 : Math.max(1, Math.min(PORTS_PER_TURN, Math.floor(ports.length / lanes)));
    const prober = new TcpProber({
      signal: ctx.signal,
      threads: ports.length >= THREADED_SCAN_PORTS,
      native: nativeEngine(ctx.settings, nativeProbes),
    });
    // Ports not yet probed, the next one last: a turn takes from the end and gives back what it left.
    const waiting = ports.toReversed();
    const open: number[] = [];
    let unanswered = 0;
    const found = (port: number, state: PortState) => {
      if (!state.open) {
        if (state.reason === "timeout") unanswered++;
        return;
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
    };
    // A lane is one throttle slot at a time; each slot probes a turn's ports, one after another.
    const lane = async () => {
      while (waiting.length > 0 && !ctx.signal.aborted) {
        let turn: number[] = [];
        let outcome: TurnOutcome;
        try {
          outcome = await ctx.throttle.run(
            address,
            () => {
              // Ports are taken once the slot is ours, so a lane waiting for one holds none.
              turn = waiting.splice(-perTurn).reverse();
              return prober.run({
                host: address,
                ports: turn,
                bannerMs: turn.map((port) => (SILENT_PORTS.has(port) ? 0 : bannerMs)),
                timeoutMs,
                bannerBytes: limits.bannerMaxBytes,
                turnMs: TURN_MS,
              });
            },
            ctx.signal,
          );
        } catch {
          return; // aborted while waiting for a slot
        }
        waiting.push(...turn.slice(outcome.probed).reverse());
        for (const { port, state } of outcome.answers) found(port, state);
      }
    };
    try {
      await Promise.all(Array.from({ length: lanes }, lane));
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
