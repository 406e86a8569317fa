/** A real Sightline server on an ephemeral port over a test store, and a small HTTP client for it. */

import type { LogSettings } from "../../src/api/logging.ts";
import { type RunningServer, startServer } from "../../src/app/server.ts";
import { type Config, loadConfig } from "../../src/core/config.ts";
import type { RunWork } from "../../src/core/run-work.ts";
import { openServices, type Services } from "../../src/store/services.ts";
import { createTestStore, type TestStore } from "./stores.ts";

export interface Keys {
  accessKey: string;
  secretKey: string;
}

/** Makes the RunWork of a test server (default: the built-in work). */
export type RunWorkFactory = (services: Services) => RunWork | Promise<RunWork>;

export interface TestServer {
  server: RunningServer;
  store: TestStore;
  config: Config;
  url: string;
  admin: Keys;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** Stops the server (not the store) and starts a new one on the same store and configuration. */
  restart(runWork?: RunWorkFactory): Promise<void>;
  close(): Promise<void>;
}

export interface RequestOptions {
  keys?: Keys | null;
  body?: unknown;
  /** Sent as is, for malformed bodies. */
  raw?: string;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON
  body: any;
  text: string;
}

export const BOOTSTRAP_KEYS: Keys = {
  accessKey: "SLTESTADMINKEY",
  secretKey: "test-admin-secret-0123456789abcdef",
};

/** The configuration of a test server on `store`: loopback, a free port, silent, the bootstrap keys. */
export function testServerConfig(store: TestStore, overrides: Partial<Config> = {}): Config {
  return loadConfig(
    {},
    {
      ...store.config,
      port: 0,
      host: "127.0.0.1",
      logLevel: "silent",
      bootstrapAccessKey: BOOTSTRAP_KEYS.accessKey,
      bootstrapSecretKey: BOOTSTRAP_KEYS.secretKey,
      // Runs do real discovery: keep its DNS on loopback (nothing answers here) unless a test brings the lab.
      dnsServers: ["127.0.0.1:53"],
      // Passive sources are outside services: none is asked unless a test brings its fakes.
      sources: ["none"],
      permutations: 0,
      ...overrides,
    },
  );
}

/**
 * The store tests' start: a fresh store on `dialect`, its services open, and one collection ("acme" of
 * team "red") to stage runs in. `close` closes the services and drops the store.
 */
export async function servicesWithCollection(
  dialect: "sqlite" | "postgres",
): Promise<{ services: Services; collectionId: number; close(): Promise<void> }> {
  const store = await createTestStore(dialect);
  const services = await openServices(testServerConfig(store));
  const account = await services.accounts.createAccount("acme", "active");
  const team = await services.accounts.createTeam(account.id, "red");
  const collection = await services.collections.create(account.id, team.id, "acme", [], "on_demand");
  return {
    services,
    collectionId: collection!.id,
    close: async () => {
      await services.store.close();
      await store.drop();
    },
  };
}

export async function startTestServer(
  dialect: "sqlite" | "postgres",
  overrides: Partial<Config> = {},
  options: { runWork?: RunWorkFactory; logger?: LogSettings } = {},
): Promise<TestServer> {
  const store = await createTestStore(dialect);
  const config = testServerConfig(store, overrides);
  let server = await startServer(config, { runWork: options.runWork, logger: options.logger });
  const request = async (
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<TestResponse> => {
    const keys = options.keys === undefined ? BOOTSTRAP_KEYS : options.keys;
    const headers: Record<string, string> = { ...options.headers };
    if (keys) {
      headers.SERVICE_ACCESS_KEY = keys.accessKey;
      headers.SERVICE_SECRET_KEY = keys.secretKey;
    }
    let body: string | undefined;
    if (options.raw !== undefined) body = options.raw;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
    const response = await fetch(`${server.url}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  };
  return {
    get server() {
      return server;
    },
    get url() {
      return server.url;
    },
    store,
    config,
    admin: BOOTSTRAP_KEYS,
    request,
    async restart(runWork = options.runWork) {
      await server.close();
      server = await startServer(config, { runWork, logger: options.logger });
    },
    async close() {
      await server.close();
      await store.drop();
    },
  };
}
