/**
 * The client side of the public API, for `sightline` commands that talk to a running server rather than
 * to the store. Where the server is and which keys to send come from, first found wins:
 *   1. options: --url, --access-key, --secret-key
 *   2. environment: SIGHTLINE_URL, SERVICE_ACCESS_KEY, SERVICE_SECRET_KEY
 *   3. the client file $XDG_CONFIG_HOME/sightline/client.json (default ~/.config/sightline/client.json):
 *      {"url": "...", "access_key": "...", "secret_key": "..."}
 * and the URL defaults to http://127.0.0.1:8080. API errors become CliErrors carrying the API's sentence.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { CliError } from "./output.ts";

export const DEFAULT_URL = "http://127.0.0.1:8080";

export interface ClientOptions {
  url?: string;
  accessKey?: string;
  secretKey?: string;
}

export interface ClientSettings {
  url: string;
  accessKey: string;
  secretKey: string;
}

export function clientConfigFile(environment: NodeJS.ProcessEnv = process.env): string {
  const base = environment.XDG_CONFIG_HOME || join(environment.HOME || homedir(), ".config");
  return join(base, "sightline", "client.json");
}

function readClientFile(file: string): ClientOptions {
  if (!existsSync(file)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new CliError(`${file} is not valid JSON: ${(error as Error).message}`, 2);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new CliError(`${file} must hold a JSON object with url, access_key and secret_key`, 2);
  const text = (key: string) => {
    const value = (parsed as Record<string, unknown>)[key];
    if (value !== undefined && typeof value !== "string")
      throw new CliError(`${file}: ${key} must be a string`, 2);
    return value || undefined;
  };
  return { url: text("url"), accessKey: text("access_key"), secretKey: text("secret_key") };
}

/** Resolves the server URL and key pair from options, environment and the client file. */
export function clientSettings(
  options: ClientOptions,
  environment: NodeJS.ProcessEnv = process.env,
): ClientSettings {
  const file = clientConfigFile(environment);
  const saved = readClientFile(file);
  const url = options.url || environment.SIGHTLINE_URL || saved.url || DEFAULT_URL;
  const accessKey = options.accessKey || environment.SERVICE_ACCESS_KEY || saved.accessKey;
  const secretKey = options.secretKey || environment.SERVICE_SECRET_KEY || saved.secretKey;
  if (!accessKey || !secretKey) {
    throw new CliError(
      `No API key pair: pass --access-key and --secret-key, set SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY, or put access_key and secret_key in ${file}`,
      2,
    );
  }
  if (!/^https?:\/\//.test(url))
    throw new CliError(`The server URL must start with http:// or https://, not "${url}"`, 2);
  return { url: url.replace(/\/+$/, ""), accessKey, secretKey };
}

/** Adds the connection options every client command takes. */
export function withClientOptions(command: Command): Command {
  return command
    .option(
      "--url <url>",
      `the Sightline server (default: SIGHTLINE_URL, the client file, or ${DEFAULT_URL})`,
    )
    .option("--access-key <key>", "API access key (default: SERVICE_ACCESS_KEY or the client file)")
    .option("--secret-key <key>", "API secret key (default: SERVICE_SECRET_KEY or the client file)");
}

/** Why a request never got an answer, as a sentence naming the URL. */
function unreachable(url: string, error: unknown): CliError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const reasons: Record<string, string> = {
    ECONNREFUSED: "connection refused; is the server running?",
    ENOTFOUND: "no such host",
    ECONNRESET: "the connection was reset",
    ETIMEDOUT: "the connection timed out",
  };
  const reason =
    (cause?.code && reasons[cause.code]) ||
    ((error as Error).name === "TimeoutError" ? "no answer within 30 seconds" : cause?.message) ||
    (error as Error).message;
  return new CliError(
    `Cannot reach Sightline at ${url}: ${reason} (set --url or SIGHTLINE_URL to point elsewhere)`,
  );
}

export class ApiClient {
  readonly settings: ClientSettings;

  constructor(settings: ClientSettings) {
    this.settings = settings;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>("POST", path, body);
  }

  /**
   * A GET whose body is to be streamed (an export): answers the response once its headers arrived (30 s
   * at most), compressed in transit and decompressed here; an error answer throws the API's sentence.
   */
  async download(path: string): Promise<Response & { body: ReadableStream<Uint8Array> }> {
    const { url, accessKey, secretKey } = this.settings;
    const waiting = new AbortController();
    const timer = setTimeout(() => waiting.abort(new DOMException("no answer", "TimeoutError")), 30_000);
    let response: Response;
    try {
      response = await fetch(`${url}${path}`, {
        headers: {
          SERVICE_ACCESS_KEY: accessKey,
          SERVICE_SECRET_KEY: secretKey,
          "accept-encoding": "br, gzip",
        },
        signal: waiting.signal,
      });
    } catch (error) {
      throw unreachable(url, error);
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok || !response.body) {
      const text = await response.text();
      let message: string | undefined;
      try {
        message = (JSON.parse(text) as { message?: string }).message;
      } catch {}
      throw new CliError(message ?? `GET ${path} failed with HTTP ${response.status}`);
    }
    return response as Response & { body: ReadableStream<Uint8Array> };
  }

  /** Sends one request and answers the envelope's `result`; an error envelope throws its sentence. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const { url, accessKey, secretKey } = this.settings;
    const headers: Record<string, string> = { SERVICE_ACCESS_KEY: accessKey, SERVICE_SECRET_KEY: secretKey };
    if (body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(`${url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw unreachable(url, error);
    }
    const text = await response.text();
    let envelope: { success?: boolean; message?: string; result?: T };
    try {
      envelope = JSON.parse(text);
    } catch {
      throw new CliError(
        `${url} answered ${method} ${path} with HTTP ${response.status} but not with Sightline's JSON; is --url right?`,
      );
    }
    if (!response.ok || envelope.success !== true) {
      throw new CliError(envelope.message ?? `${method} ${path} failed with HTTP ${response.status}`);
    }
    return envelope.result as T;
  }
}

/**
 * A value as one path segment, percent-encoded; `.` and `..` (names once accepted) have their dots
 * encoded too, or URL resolution would read them as "this folder" and "the folder above".
 */
export function pathSegment(value: string): string {
  return /^\.{1,2}$/.test(value) ? value.replace(/\./g, "%2E") : encodeURIComponent(value);
}

/** A collection name as a path segment. */
export function collectionPath(collection: string, rest = ""): string {
  return `/api/collections/${pathSegment(collection)}${rest}`;
}
