/**
 * DNS lookups for discovery modules: Node's c-ares resolver on the configured servers (host:port) with
 * bounded timeouts and tries, throttled per resolver, cancelled with the run. Every lookup answers an
 * outcome instead of throwing, because "no such name" and "no answer" are findings, not failures.
 * Answers are bounded: at most `dnsMaxRecords` records of a type per name, TXT cut at `dnsMaxTxtLength`
 * characters, so a hostile zone cannot flood a run with thousands of addresses to scan.
 */
import { Resolver } from "node:dns/promises";
import { setBounded } from "../../core/bounded-map.ts";
import type { DiscoveryContext } from "../module.ts";

/** `dropped`: records past SIGHTLINE_DNS_MAX_RECORDS that were left out of `value`. */
export type DnsOutcome<T> = { ok: true; value: T; dropped?: number } | { ok: false; code: DnsFailure };

/**
 * `nxdomain`: the name does not exist; `nodata`: it exists without records of that type;
 * `timeout`: no server answered; `error`: a server failed (SERVFAIL, REFUSED, …); `cancelled`: the run stopped.
 */
export type DnsFailure = "nxdomain" | "nodata" | "timeout" | "error" | "cancelled";

const FAILURES: Record<string, DnsFailure> = {
  ENOTFOUND: "nxdomain",
  ENODATA: "nodata",
  ETIMEOUT: "timeout",
  ECONNREFUSED: "timeout",
  ECANCELLED: "cancelled",
};

export interface MxRecord {
  exchange: string;
  priority: number;
}
export interface SrvRecord {
  name: string;
  port: number;
  priority: number;
  weight: number;
}
export interface SoaRecord {
  nsname: string;
  hostmaster: string;
  serial: number;
}
export interface CaaRecord {
  critical: number;
  issue?: string;
  issuewild?: string;
  iodef?: string;
}

type DnsContext = Pick<DiscoveryContext, "settings" | "signal" | "throttle">;

/** Lower-case, no trailing dot: the one spelling of a name across modules. */
export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/**
 * c-ares channels, one per timeout and server list, shared by every client of this thread: a channel
 * and its socket made per client (one a task: each address's reverse look-up) were 2% of the discovery
 * thread's time at /20. A query on a shared channel is not cancelled with its task (that would cancel
 * every task's); the task stops waiting for it, and the query ends at its own time bound.
 */
const channels = new Map<string, Resolver>();
const CHANNELS_KEPT = 16;

function sharedResolver(timeoutMs: number, servers: string[]): Resolver {
  // c-ares lengthens each retry's wait: a first wait of a quarter of the budget gives up near timeoutMs.
  const timeout = Math.max(50, Math.ceil(timeoutMs / 4));
  const key = `${timeout} ${servers.join(",")}`;
  let resolver = channels.get(key);
  if (!resolver) {
    resolver = new Resolver({ timeout, tries: 2 });
    if (servers.length > 0) resolver.setServers(servers);
    setBounded(channels, key, resolver, CHANNELS_KEPT);
  }
  return resolver;
}

/** The run's end, as a lookup's failure. */
const CANCELLED = Object.assign(new Error("the lookup was cancelled"), { code: "ECANCELLED" });

/** `lookup`, or a rejection as soon as `signal` aborts. */
function untilAborted<T>(lookup: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(CANCELLED);
    signal.addEventListener("abort", onAbort, { once: true });
    lookup.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

export class DnsClient {
  readonly #resolver: Resolver;
  readonly #context: DnsContext;
  readonly #throttleKey: string;

  constructor(context: DnsContext) {
    this.#context = context;
    const { timeoutMs, dnsServers } = context.settings;
    this.#resolver = sharedResolver(timeoutMs, dnsServers);
    this.#throttleKey = `dns:${dnsServers.join(",") || "system"}`;
  }

  async #lookup<T>(run: (resolver: Resolver) => Promise<T>): Promise<DnsOutcome<T>> {
    const { signal } = this.#context;
    if (signal.aborted) return { ok: false, code: "cancelled" };
    try {
      const value = await this.#context.throttle.run(
        this.#throttleKey,
        () => untilAborted(run(this.#resolver), signal),
        signal,
      );
      const most = this.#context.settings.limits.dnsMaxRecords;
      if (Array.isArray(value) && value.length > most)
        return { ok: true, value: value.slice(0, most) as T, dropped: value.length - most };
      return { ok: true, value };
    } catch (error) {
      if (this.#context.signal.aborted) return { ok: false, code: "cancelled" };
      return { ok: false, code: FAILURES[(error as NodeJS.ErrnoException).code ?? ""] ?? "error" };
    }
  }

  a(name: string) {
    return this.#lookup((r) => r.resolve4(name));
  }
  aaaa(name: string) {
    return this.#lookup((r) => r.resolve6(name));
  }
  cname(name: string) {
    return this.#lookup((r) => r.resolveCname(name));
  }
  mx(name: string) {
    return this.#lookup<MxRecord[]>((r) => r.resolveMx(name));
  }
  ns(name: string) {
    return this.#lookup((r) => r.resolveNs(name));
  }
  txt(name: string) {
    const longest = this.#context.settings.limits.dnsMaxTxtLength;
    return this.#lookup(async (r) =>
      (await r.resolveTxt(name)).map((chunks) => chunks.join("").slice(0, longest)),
    );
  }
  soa(name: string) {
    return this.#lookup<SoaRecord>((r) => r.resolveSoa(name));
  }
  caa(name: string) {
    return this.#lookup<CaaRecord[]>((r) => r.resolveCaa(name));
  }
  srv(name: string) {
    return this.#lookup<SrvRecord[]>((r) => r.resolveSrv(name));
  }
  ptr(address: string) {
    return this.#lookup((r) => r.reverse(address));
  }

  /**
   * Whether a name exists, with its IPv4 addresses: one A and one CNAME query, the cheapest proof for a
   * brute force. A CNAME whose target is missing answers NXDOMAIN to A yet exists (and dangles).
   */
  async probe(
    name: string,
  ): Promise<{ exists: boolean; addresses: string[]; alias?: string; failure?: DnsFailure }> {
    const [v4, alias] = await Promise.all([this.a(name), this.cname(name)]);
    const target = alias.ok ? canonicalName(alias.value[0]) : undefined;
    const exists = v4.ok || (!v4.ok && v4.code === "nodata") || target !== undefined;
    return {
      exists,
      addresses: v4.ok ? v4.value : [],
      alias: target,
      failure: exists || v4.ok ? undefined : v4.code,
    };
  }

  /** The IPv4 and IPv6 addresses of a name (CNAMEs followed), and whether the name exists at all. */
  async addresses(name: string): Promise<{ exists: boolean; addresses: string[]; failure?: DnsFailure }> {
    const [v4, v6] = await Promise.all([this.a(name), this.aaaa(name)]);
    const addresses = [...(v4.ok ? v4.value : []), ...(v6.ok ? v6.value : [])];
    const exists = addresses.length > 0 || [v4, v6].some((o) => !o.ok && o.code === "nodata");
    const failure = exists ? undefined : v4.ok ? undefined : v4.code;
    return { exists, addresses, failure };
  }
}
