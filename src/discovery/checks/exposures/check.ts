/**
 * What an exposure check is: an issue written once (identity, severity, text, references), the services
 * it applies to, and `prove`, which asks the service one read-only question and answers the proof —
 * what was sent and the start of what came back, secrets redacted — or nothing when the service is
 * not exposed. Checks never write to a target: no SET, no STOR, no PUBLISH, no DATA.
 */
import type { FoundIssue } from "../../../core/entities.ts";
import { type Conversation, type ConversationOptions, converse, printable } from "../../net/conversation.ts";

export type IssueTemplate = Omit<FoundIssue, "entity" | "details">;

export interface ExposureTarget {
  address: string;
  port: number;
  protocol: "tcp" | "udp";
  /** The service the port was identified as (`redis`, `http`, …), or the port's conventional name. */
  service: string;
  /** Whether the service speaks TLS (from identification; HTTP checks try both when unknown). */
  tls: boolean;
  timeoutMs: number;
  /** Cap on the bytes read from the service per conversation. */
  maxBytes: number;
  signal: AbortSignal;
  /** May this address be sent a request (the run's scope: allow and deny lists)? */
  mayTouch(address: string): boolean;
}

/** The proof of an exposure: what was sent, the start of the answer, and check-specific facts. */
export interface Proof {
  sent: string;
  received: string;
  [fact: string]: unknown;
}

export interface ExposureCheck extends IssueTemplate {
  /** Service names (nmap's) this check applies to. */
  services: readonly string[];
  /** Ports it applies to whatever the port was named (a fallback while identification is by port). */
  ports?: readonly number[];
  /** Transport; default tcp. */
  transport?: "tcp" | "udp";
  prove(target: ExposureTarget): Promise<Proof | undefined>;
}

export const check = (definition: ExposureCheck) => definition;

/** The conversation options for a target (TLS when it speaks TLS, unless `tls` says otherwise). */
export function talkTo(target: ExposureTarget, tls = target.tls): ConversationOptions {
  return {
    host: target.address,
    port: target.port,
    timeoutMs: target.timeoutMs,
    maxBytes: target.maxBytes,
    signal: target.signal,
    tls,
  };
}

export function talk<T>(
  target: ExposureTarget,
  conversation: (talking: Conversation) => Promise<T>,
  tls = target.tls,
): Promise<T | undefined> {
  return converse(talkTo(target, tls), conversation);
}

const SECRET_PATTERNS: Array<[RegExp, string]> = [
  // key=value and "key": "value" forms whose key names a secret
  [
    /((?:pass(?:word|wd)?|secret|token|api[_-]?key|auth(?!orization)|credential|private[_-]?key|requirepass|masterauth)[\w.-]*["']?\s*[:=]\s*["']?)([^\s"',;&]+)/gi,
    "$1[redacted]",
  ],
  [/(authorization:\s*\w+\s+)\S+/gi, "$1[redacted]"],
  [/\b(eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,})\b/g, "[redacted-jwt]"],
  [
    /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g,
    "[redacted-private-key]",
  ],
];

/** Removes what looks like a secret (passwords, tokens, keys) from text kept as proof. */
export function redact(text: string): string {
  return SECRET_PATTERNS.reduce((kept, [pattern, replacement]) => kept.replace(pattern, replacement), text);
}

/** The start of an answer as proof: printable, bounded, redacted. */
export function excerpt(bytes: Buffer | string, length = 300): string {
  return redact(typeof bytes === "string" ? bytes.slice(0, length) : printable(bytes, length));
}

/** Printable form of what was sent (binary requests as \xNN). */
export function shown(bytes: Buffer | string): string {
  return typeof bytes === "string" ? bytes.replace(/\r\n/g, "\n").trimEnd() : printable(bytes, 400);
}
