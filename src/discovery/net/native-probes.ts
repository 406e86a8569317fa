/**
 * The native probe engine (src/discovery/net/native/tcp-probe.c), when it was built: turns of connect
 * probes run in C on threads of the addon's own, each waiting on all its probes in flight with one
 * poll(), and JavaScript sees a turn once, when it ends. On loopback a scan is bound by the CPU its
 * probes cost, and here a probe costs the kernel's socket, connect, getsockopt and close and little
 * else (see bench/ports.ts and docs/decisions.md).
 *
 * `npm ci` builds it (`prepare`, src/discovery/net/native/build.ts) where a C compiler is found; when it
 * was not built or does not load, `nativeProbes` is undefined and scans use the JS engine
 * (tcp-connect.ts), which stays complete and tested. SIGHTLINE_PROBE_ENGINE=js chooses it regardless.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** A port's state in a native turn's answer. */
export const NativeState = { notProbed: 0, open: 1, refused: 2, timeout: 3, error: 4 } as const;

export interface NativeProbes {
  /**
   * Probes `ports` of `address` (IPv4 or IPv6) one after another, each waited on up to `timeoutMs`;
   * no port starts once the turn has run `turnMs`. Answers a state per port (NativeState); the ports
   * after the last probed one are `notProbed`.
   */
  probe(
    id: number,
    address: string,
    ports: Uint16Array,
    timeoutMs: number,
    turnMs: number,
  ): Promise<Uint8Array>;
  /** Ends turn `id` now: its port in flight is answered `error`, the rest `notProbed`. */
  cancel(id: number): void;
  /** Starts the probe threads (the first probe does otherwise); answers how many run. */
  start(threads: number): number;
  /** Lets the probe threads go if no turn is pending (a later probe starts them); answers whether it did. */
  stop(): boolean;
}

/** Where the build leaves the addon. */
export const NATIVE_PROBES_PATH = new URL("./native/build/tcp-probe.node", import.meta.url);

/** Loads the addon at `path`; a missing or broken file is a problem said, not an error thrown. */
export function loadNativeProbes(path: URL = NATIVE_PROBES_PATH): {
  probes?: NativeProbes;
  problem?: string;
} {
  try {
    return { probes: createRequire(import.meta.url)(fileURLToPath(path)) as NativeProbes };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

const loaded = loadNativeProbes();

/** The native engine, or undefined when it was not built or did not load (`nativeProbesProblem` says why). */
export const nativeProbes: NativeProbes | undefined = loaded.probes;
export const nativeProbesProblem: string | undefined = loaded.problem;
