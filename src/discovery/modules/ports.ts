/**
 * TCP connect scan of an address over the configured port list, with banner grabbing: an open port is
 * read for what the service says first, within a short bound (web and TLS ports are not waited on).
 * Every connection goes through the throttle (global and per-host concurrency, rate) and honours the
 * run's abort signal. Open ports become NetworkService entities named "1.2.3.4:22/tcp".
 */
import { serviceName } from "../../core/service-names.ts";
import type { DiscoveryModule, DiscoverySettings } from "../module.ts";
import { type NativeProbes, nativeProbes } from "../net/native-probes.ts";
import { type PortState, TcpProber, type TurnOutcome } from "../net/tcp-prober.ts";
import { identifyService } from "../service-id.ts";
import { osFromBanner, SILENT_PORTS } from "../services.ts";

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

export const portScan: DiscoveryModule = {
  name: "ports",
  consumes: ["IpAddress"],
  produces: ["NetworkService"],
  waits: true,
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
      native: nativeEngine(ctx.settings, nativeProbes),
    });
    // Ports not yet probed, the next one last: a turn takes from the end and gives back what it left.
    const waiting = ports.toReversed();
    const open: number[] = [];
    let unanswered = 0;
    const identifications: Promise<void>[] = [];
    // An open port is named by what it answers (service-id.ts), each probe in a slot of its own.
    const identify = async (port: number, greeting: Buffer | undefined) => {
      const identity = await identifyService({
        host: address,
        port,
        greeting,
        connectMs: timeoutMs,
        firstByteMs: bannerMs,
        signal: ctx.signal,
        slot: (work) => ctx.throttle.run(address, work, ctx.signal),
      }).catch(() => undefined);
      if (!identity) return; // aborted while waiting for a slot
      ctx.emit({
        kind: "NetworkService",
        name: serviceName(address, port),
        details: { ip_address: address, port, protocol: "tcp", ...identity },
      });
      const os = osFromBanner(identity.banner);
      if (os) ctx.emit({ kind: "IpAddress", name: address, details: { os } });
    };
    const found = (port: number, state: PortState) => {
      if (!state.open) {
        if (state.reason === "timeout") unanswered++;
        return;
      }
      open.push(port);
      // The scan waited for a greeting on this port unless it is one whose clients speak first.
      const greeting = SILENT_PORTS.has(port) ? state.greeting : (state.greeting ?? Buffer.alloc(0));
      identifications.push(identify(port, greeting));
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
    await Promise.all(identifications);
    ctx.emit({
      kind: "IpAddress",
      name: address,
      details: {
        scan: { ports_scanned: ports.length, open: open.sort((a, b) => a - b), filtered: unanswered },
      },
    });
  },
};
