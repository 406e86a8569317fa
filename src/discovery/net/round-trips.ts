/**
 * How long host discovery waits for an address to answer, learnt from the answers of its neighbours, as
 * nmap times its probes: a smoothed round trip and its variation (RFC 6298's estimator), the wait their
 * sum with four variations, between a floor and the configured ceiling. Addresses of one network (an
 * IPv4 /16, an IPv6 /48) are taken to be about as far away as each other; until a network has given
 * MIN_SAMPLES answers its addresses get the whole ceiling.
 *
 * An unused address answers nothing, so it costs the wait on each of its first-round ports: in a block
 * that is mostly unused (most real ones) that wait is what the scan takes, and a network a few
 * milliseconds away need not be given a second. An address in use is never judged by this wait alone:
 * whatever its first round left unanswered is asked again with the whole timeout (modules/ports.ts).
 */
import type ipaddr from "ipaddr.js";
import { canonicalAddress, parseAddress } from "../../core/address-policy.ts";
import { setBounded } from "../../core/bounded-map.ts";

/** Answers a network must have given before its estimate is used. */
export const MIN_SAMPLES = 8;
/** Networks remembered per process; the least recently answered is forgotten first. */
const NETWORKS = 4096;

interface Estimate {
  smoothed: number;
  variation: number;
  samples: number;
}

const ipv4Network = (dotted: string) => dotted.split(".", 2).join(".");

/**
 * The network an address is timed with: its IPv4 /16 or IPv6 /48. Entities name addresses canonically,
 * so a dotted one needs no parsing; anything else goes through the address policy (an IPv4-mapped
 * spelling is its IPv4 address).
 */
export function networkOf(address: string): string {
  if (!address.includes(":")) return ipv4Network(address);
  const parsed = parseAddress(address);
  if (!parsed) return address;
  const canonical = canonicalAddress(parsed);
  if (!canonical.includes(":")) return ipv4Network(canonical);
  return (parsed as ipaddr.IPv6).parts
    .slice(0, 3)
    .map((part) => part.toString(16))
    .join(":");
}

export class RoundTrips {
  readonly #networks = new Map<string, Estimate>();

  /** An answer (an open port or a refusal) from `address` that took `ms` from the connection's start. */
  observe(address: string, ms: number): void {
    const network = networkOf(address);
    const estimate = this.#networks.get(network);
    if (!estimate) {
      setBounded(this.#networks, network, { smoothed: ms, variation: ms / 2, samples: 1 }, NETWORKS);
      return;
    }
    estimate.variation = 0.75 * estimate.variation + 0.25 * Math.abs(estimate.smoothed - ms);
    estimate.smoothed = 0.875 * estimate.smoothed + 0.125 * ms;
    estimate.samples++;
    setBounded(this.#networks, network, estimate, NETWORKS);
  }

  /** How long to wait for `address`: the estimate, at least `floorMs`, at most `ceilingMs`. */
  wait(address: string, floorMs: number, ceilingMs: number): number {
    const estimate = this.#networks.get(networkOf(address));
    if (!estimate || estimate.samples < MIN_SAMPLES || floorMs >= ceilingMs) return ceilingMs;
    const expected = Math.ceil(estimate.smoothed + 4 * estimate.variation);
    return Math.min(ceilingMs, Math.max(floorMs, expected));
  }
}

/** This process's (or discovery thread's) estimates, shared by its scans. */
export const roundTrips = new RoundTrips();
