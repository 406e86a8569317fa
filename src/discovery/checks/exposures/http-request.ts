/**
 * One bounded HTTP/1.1 request for the exposure checks (GET, or a read-only POST such as etcd's range
 * query), over plain TCP or TLS: `Connection: close`, the answer read to its end, the cap or the
 * deadline. A service whose plain answer is not HTTP is asked again over TLS (kubelet, Docker on 2376).
 */
import type { Conversation } from "../../net/conversation.ts";
import { type ExposureTarget, talk } from "./check.ts";

export interface HttpAnswer {
  /** The request as sent (text). */
  sent: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Whether the request went over TLS. */
  tls: boolean;
}

/** Ports where HTTP APIs usually speak TLS: tried over TLS first. */
const TLS_FIRST = new Set([443, 2376, 4443, 6443, 8443, 9443, 10250, 10257, 10259]);

export function httpRequestText(
  target: Pick<ExposureTarget, "address" | "port">,
  path: string,
  options: { method?: string; body?: string; headers?: Record<string, string>; absolute?: string } = {},
): string {
  const host = target.address.includes(":")
    ? `[${target.address}]:${target.port}`
    : `${target.address}:${target.port}`;
  const lines = [
    `${options.method ?? "GET"} ${options.absolute ?? path} HTTP/1.1`,
    `Host: ${options.absolute ? new URL(options.absolute).host : host}`,
    "User-Agent: Sightline",
    "Accept: */*",
    "Connection: close",
    ...Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
  ];
  if (options.body !== undefined)
    lines.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(options.body)}`);
  return `${lines.join("\r\n")}\r\n\r\n${options.body ?? ""}`;
}

/** Parses an HTTP/1.x answer (chunked bodies joined); undefined when it is not HTTP. */
export function parseHttpAnswer(raw: Buffer): Omit<HttpAnswer, "sent" | "tls"> | undefined {
  const text = raw.toString("latin1");
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (!status) return undefined;
  const split = text.indexOf("\r\n\r\n");
  const head = split >= 0 ? text.slice(0, split) : text;
  const headers: Record<string, string> = {};
  for (const line of head.split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = split >= 0 ? raw.subarray(split + 4).toString("utf8") : "";
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) body = dechunk(body);
  return { status: Number(status[1]), headers, body };
}

function dechunk(body: string): string {
  let out = "";
  let at = 0;
  while (at < body.length) {
    const end = body.indexOf("\r\n", at);
    if (end < 0) break;
    const size = Number.parseInt(body.slice(at, end), 16);
    if (!Number.isFinite(size) || size <= 0) break;
    out += body.slice(end + 2, end + 2 + size);
    at = end + 2 + size + 2;
  }
  return out;
}

/** Whether an answer so far is a whole HTTP message (headers, and the body its framing announces). */
function complete(bytes: Buffer): boolean {
  const text = bytes.toString("latin1");
  const split = text.indexOf("\r\n\r\n");
  if (split < 0) return false;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, split));
  if (length) return bytes.length - (split + 4) >= Number(length[1]);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(text.slice(0, split))) return /\r\n0\r\n\r\n$/.test(text);
  return false; // read to close
}

async function exchange(conversation: Conversation, request: string) {
  conversation.send(request);
  const bytes = await conversation.read(complete);
  return { bytes, silent: bytes.length === 0 && conversation.timedOut };
}

/**
 * Sends one request; over TLS first on the usual TLS ports, and again the other way if the answer is not
 * HTTP. A plain request that could not connect, or that the service let go unanswered for the whole
 * timeout, is not sent again over TLS: TLS would not connect either, and a TLS server answers plain bytes
 * at once (an alert, a 400, a close), so a silent service costs one timeout, not two.
 */
export async function httpRequest(
  target: ExposureTarget,
  path: string,
  options: Parameters<typeof httpRequestText>[2] = {},
): Promise<HttpAnswer | undefined> {
  const sent = httpRequestText(target, path, options);
  const first = target.tls || TLS_FIRST.has(target.port);
  for (const tls of [first, !first]) {
    const answer = await talk(target, (conversation) => exchange(conversation, sent), tls);
    const parsed = answer && parseHttpAnswer(answer.bytes);
    if (parsed) return { sent: sent.replace(/\r\n/g, "\n").trimEnd(), tls, ...parsed };
    if (target.signal.aborted || (!tls && (!answer || answer.silent))) return undefined;
  }
  return undefined;
}

/** The body parsed as JSON, or undefined. */
export function json(answer: HttpAnswer | undefined): unknown {
  if (!answer) return undefined;
  try {
    return JSON.parse(answer.body);
  } catch {
    return undefined;
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
