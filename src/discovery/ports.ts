/**
 * TCP connect scan of an address over the configured port list, with banner grabbing: an open port is
 * read for what the service says first, within a short bound (web and TLS ports are not waited on).
 * Every connection goes through the throttle (global and per-host concurrency, rate) and honours the
 * run's abort signal. Open ports become NetworkService entities named "1.2.3.4:22/tcp".
 */
import { isIPv6, Socket } from "node:net";
import type { DiscoveryModule } from "./module.ts";
import { identifyService, osFromBanner, SILENT_PORTS } from "./services.ts";

/** Longest wait for a greeting once connected: SSH, SMTP and FTP greet at once; a slow one still shows. */
const BANNER_BOUND_MS = 1500;
const BANNER_BYTES = 1024;

export type PortState =
  | { open: true; greeting?: Buffer }
  | { open: false; reason: "closed" | "timeout" | "error" };

export interface ProbeOptions {
  timeoutMs: number;
  /** 0 = close at once after connecting. */
  bannerMs: number;
  signal: AbortSignal;
}

/** Connects once; answers whether the port is open and, if asked, what the service sent first. */
export function probePort(host: string, port: number, options: ProbeOptions): Promise<PortState> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let connected = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (state: PortState) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(state);
    };
    const onAbort = () => finish(connected ? { open: true } : { open: false, reason: "error" });
    if (options.signal.aborted) return finish({ open: false, reason: "error" });
    options.signal.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(() => finish({ open: false, reason: "timeout" }), options.timeoutMs);
    socket.once("error", (error: NodeJS.ErrnoException) =>
      finish(
        connected
          ? { open: true }
          : { open: false, reason: error.code === "ECONNREFUSED" ? "closed" : "error" },
      ),
    );
    socket.once("close", () => finish(connected ? { open: true } : { open: false, reason: "closed" }));
    // A greeting is written in one go (a line, or a binary handshake such as MySQL's): the first segment is it.
    socket.once("data", (chunk: Buffer) => finish({ open: true, greeting: chunk.subarray(0, BANNER_BYTES) }));
    socket.connect({ host, port }, () => {
      connected = true;
      clearTimeout(timer);
      if (options.bannerMs <= 0) return finish({ open: true });
      timer = setTimeout(() => finish({ open: true }), options.bannerMs);
    });
  });
}

/** The entity name of a TCP service: "1.2.3.4:22/tcp", "[2001:db8::1]:443/tcp". */
export function serviceName(address: string, port: number): string {
  return `${isIPv6(address) ? `[${address}]` : address}:${port}/tcp`;
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
    const { ports, timeoutMs } = ctx.settings;
    const bannerMs = Math.min(BANNER_BOUND_MS, timeoutMs);
    const open: number[] = [];
    let unanswered = 0;
    await Promise.all(
      ports.map(async (port) => {
        let state: PortState;
        try {
          state = await ctx.throttle.run(
            address,
            () =>
              probePort(address, port, {
                timeoutMs,
                bannerMs: SILENT_PORTS.has(port) ? 0 : bannerMs,
                signal: ctx.signal,
              }),
            ctx.signal,
          );
        } catch {
          return; // aborted while waiting for a slot
        }
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
      }),
    );
    ctx.emit({
      kind: "IpAddress",
      name: address,
      details: {
        scan: { ports_scanned: ports.length, open: open.sort((a, b) => a - b), filtered: unanswered },
      },
    });
  },
};
