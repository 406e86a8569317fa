/** A discovery context that records what a module found, and the entities the templates module consumes. */
import { DEFAULTS } from "../../../src/core/config.ts";
import type { FoundEntity, FoundIssue } from "../../../src/core/entities.ts";
import type { DiscoveryContext } from "../../../src/discovery/module.ts";
import { discoveryLimits } from "../../../src/discovery/module.ts";
import { Throttle } from "../../../src/discovery/net/throttle.ts";
import type { TemplateSettings } from "../../../src/discovery/templates/library.ts";

export interface Collected {
  issues: FoundIssue[];
  notes: string[];
}

export function context(
  options: {
    dnsServers?: string[];
    templates?: Partial<TemplateSettings>;
    signal?: AbortSignal;
    timeoutMs?: number;
    maxBodyBytes?: number;
  } = {},
): DiscoveryContext & Collected {
  const collected: Collected = { issues: [], notes: [] };
  return {
    ...collected,
    signal: options.signal ?? new AbortController().signal,
    depth: 1,
    throttle: new Throttle({ concurrency: 32, perHostConcurrency: 16, rateLimit: 0 }),
    settings: {
      dnsServers: options.dnsServers ?? [],
      ports: [],
      wordlist: "small",
      timeoutMs: options.timeoutMs ?? 2000,
      concurrency: 32,
      perHostConcurrency: 16,
      rateLimit: 0,
      limits: {
        ...discoveryLimits(DEFAULTS),
        httpMaxBodyBytes: options.maxBodyBytes ?? DEFAULTS.httpMaxBodyBytes,
      },
      templates: {
        builtIn: true,
        directories: [],
        tags: [],
        severities: [],
        allow: [],
        ...options.templates,
      },
    },
    emit: () => {},
    raise: (issue) => collected.issues.push(issue),
    note: (message) => collected.notes.push(message),
    mayTouch: (address) => address.startsWith("127.117.") || address.endsWith(".test"),
  };
}

/** A web application as web probing emits it. */
export const application = (url: string, address: string): FoundEntity => ({
  kind: "Uri",
  name: url,
  details: { response_data_hash: "0", ip_address: address, hostname: new URL(url).hostname },
});

export const service = (address: string, port: number): FoundEntity => ({
  kind: "NetworkService",
  name: `${address}:${port}/tcp`,
  details: { ip_address: address, port },
});
