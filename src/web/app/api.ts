/**
 * The dashboard's only way to the server: the public API with the user's key pair, unwrapping the
 * envelope. Failures become ApiFailure carrying the API's own sentence, so every page can show it.
 */

export interface Keys {
  accessKey: string;
  secretKey: string;
}

export interface ErrorDetail {
  field: string;
  message: string;
}

export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];
  constructor(status: number, code: string, message: string, details: ErrorDetail[] = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

const STORAGE_KEY = "sightline.keys";

/** The key pair lives in sessionStorage: gone when the browser session ends, never in a cookie. */
export function storedKeys(): Keys | undefined {
  try {
    const parsed = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? "null");
    if (parsed && typeof parsed.accessKey === "string" && typeof parsed.secretKey === "string") return parsed;
  } catch {
    // Unreadable storage is the same as no keys.
  }
  return undefined;
}

export function storeKeys(keys: Keys | undefined) {
  if (keys) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(keys));
  else sessionStorage.removeItem(STORAGE_KEY);
}

/** Listeners told when the API refuses the stored keys (revoked mid-session), to send the user to sign-in. */
const unauthorisedListeners = new Set<(message: string) => void>();
export function onUnauthorised(listener: (message: string) => void) {
  unauthorisedListeners.add(listener);
  return () => unauthorisedListeners.delete(listener);
}

export interface ApiResponse<T> {
  result: T;
  /** X-Total-Count, once list endpoints page. */
  total?: number;
}

/** Sends one request and answers the envelope's `result`; throws ApiFailure with the API's sentence. */
export async function call<T>(
  method: string,
  path: string,
  options: { body?: unknown; keys?: Keys } = {},
): Promise<ApiResponse<T>> {
  const keys = options.keys ?? storedKeys();
  const headers: Record<string, string> = { accept: "application/json" };
  if (keys) {
    headers.SERVICE_ACCESS_KEY = keys.accessKey;
    headers.SERVICE_SECRET_KEY = keys.secretKey;
  }
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  } catch {
    throw new ApiFailure(
      0,
      "network",
      "The Sightline server could not be reached; check that it is running and try again.",
    );
  }
  const text = await response.text();
  let envelope: {
    success?: boolean;
    message?: string;
    result?: T;
    error?: { code?: string; details?: ErrorDetail[] };
  };
  try {
    envelope = JSON.parse(text);
  } catch {
    const status = `${response.status} ${response.statusText}`.trim();
    throw new ApiFailure(
      response.status,
      "not_json",
      `The server answered ${status} without the JSON envelope; check that this address is a Sightline server.`,
    );
  }
  if (!response.ok || envelope.success !== true) {
    const failure = new ApiFailure(
      response.status,
      envelope.error?.code ?? "error",
      envelope.message || `The request failed with status ${response.status}.`,
      envelope.error?.details ?? [],
    );
    if (response.status === 401 && !options.keys)
      for (const listener of unauthorisedListeners) listener(failure.message);
    throw failure;
  }
  const total = response.headers.get("x-total-count");
  return { result: envelope.result as T, total: total === null ? undefined : Number(total) };
}

export async function get<T>(path: string): Promise<T> {
  return (await call<T>("GET", path)).result;
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  return (await call<T>("POST", path, { body })).result;
}

export async function del<T>(path: string): Promise<T> {
  return (await call<T>("DELETE", path)).result;
}

/** `/api/collections/<name><rest>` with the name escaped. */
export function collectionPath(name: string, rest = ""): string {
  return `/api/collections/${pathSegment(name)}${rest}`;
}

/** A value as one path segment; the dots of `.` and `..` are encoded too, or the URL would resolve them. */
export function pathSegment(value: string): string {
  return /^\.{1,2}$/.test(value) ? value.replace(/\./g, "%2E") : encodeURIComponent(value);
}

/** A sentence for anything thrown: the API's own, or a plain one. */
export function sentence(error: unknown): string {
  if (error instanceof ApiFailure) return error.message;
  if (error instanceof Error && error.message) return error.message;
  return "Something went wrong; try again.";
}

export function isMissingEndpoint(error: unknown): boolean {
  return error instanceof ApiFailure && error.status === 404 && /^There is no /.test(error.message);
}
