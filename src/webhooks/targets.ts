/**
 * Where webhooks may be sent. A webhook URL is chosen by any user of a collection, and Sightline sends
 * to it from inside the operator's network, so it must not become a way to reach what only the server
 * can reach: the cloud metadata services (169.254.169.254 and friends), link-local, loopback and
 * private addresses are refused — the same built-in list that keeps scans off them — unless the
 * operator allows them with SIGHTLINE_WEBHOOK_ALLOW (CIDRs or names, e.g. an internal receiver).
 *
 * The check runs twice: when the webhook is registered (the URL and what its name resolves to then),
 * and at every delivery inside the connection's own DNS lookup, so a name that later resolves
 * elsewhere (DNS rebinding) is refused at the moment the socket would connect.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import { AddressPolicy, BUILT_IN_DENY_ADDRESSES } from "../core/address-policy.ts";
import { normaliseIpAddress } from "../core/seeds.ts";

/** Names that lead to the server itself or to a metadata service whatever they resolve to. */
const DENIED_NAMES = ["localhost", "metadata.google.internal", "metadata", "instance-data"];

export class WebhookTargets {
  /** The scans' address policy: every IPv6 spelling of an IPv4 address counts as that address. */
  readonly #policy: AddressPolicy;

  constructor(allow: readonly string[]) {
    this.#policy = new AddressPolicy({ allow, builtIn: [...BUILT_IN_DENY_ADDRESSES, ...DENIED_NAMES] });
  }

  /** Why an address may not receive webhooks, or undefined when it may. */
  addressProblem(address: string): string | undefined {
    if (this.#policy.allowsAddress(address)) return undefined;
    return `${address} is a loopback, private, link-local, metadata or reserved address (allow it with SIGHTLINE_WEBHOOK_ALLOW)`;
  }

  /** Why a URL may not receive webhooks (checking what its name resolves to now), or undefined. */
  async urlProblem(text: string): Promise<string | undefined> {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return "it is not an absolute URL";
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return "only http:// and https:// URLs are allowed";
    if (url.username || url.password)
      return "it must not carry a user name or password; authenticate with the signature";
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    const literal = normaliseIpAddress(host);
    if (literal) return this.addressProblem(literal);
    if (!this.#policy.allowsName(host)) return `${host} names the server itself or a metadata service`;
    let addresses: LookupAddress[];
    try {
      addresses = await new Promise((resolve, reject) =>
        dnsLookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
      );
    } catch (error) {
      return `${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? "lookup failed"})`;
    }
    for (const { address } of addresses) {
      const problem = this.addressProblem(address);
      if (problem) return `${host} resolves to ${problem}`;
    }
    return undefined;
  }

  /** A DNS lookup for the delivery client that refuses denied addresses at connect time. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, found) => {
      if (error) return callback(error, "", 0);
      const addresses = found as LookupAddress[];
      for (const { address } of addresses) {
        const problem = this.addressProblem(address);
        if (problem)
          return callback(Object.assign(new Error(`refused: ${problem}`), { code: "EREFUSED" }), "", 0);
      }
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
