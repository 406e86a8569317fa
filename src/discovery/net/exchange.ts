/**
 * One bounded request-and-answer on a TCP connection, in the clear or inside TLS: connect, optionally
 * read the server's greeting line, send, read the answer. Every read is bounded in bytes and time: a
 * short wait for the first byte (a silent service costs that, not a full timeout), a short gap after
 * the last byte, an overall limit, a byte cap; the run's abort signal ends it at once.
 */
import { type Socket, connect as tcpConnect } from "node:net";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { lenientContext } from "./secure-contexts.ts";

export interface ExchangeOptions {
  host: string;
  port: number;
  tls?: boolean;
  /** What to send; nothing reads the greeting only. */
  send?: Buffer;
  /** Read the greeting (up to its first line end) before sending, and leave it out of the answer. */
  greetingFirst?: boolean;
  /** Connect (and TLS handshake) limit. */
  connectMs: number;
  /** How long to wait for the answer's first byte. */
  firstByteMs: number;
  /** How long a quiet gap after the last byte ends the answer. */
  idleMs: number;
  maxBytes: number;
  signal: AbortSignal;
  /** Sent once the answer is read, before closing (a protocol's goodbye). */
  farewell?: Buffer;
  /** TLS: end once the handshake is done (a TLS probe). */
  handshakeOnly?: boolean;
  /** Called on each new chunk: true when the answer is complete (the caller recognised it). */
  complete?: (answer: Buffer) => boolean;
}

export interface ExchangeResult {
  connected: boolean;
  /** The answer (at most maxBytes). */
  answer: Buffer;
  /** The peer closed or reset the connection. */
  closed: boolean;
  /** TLS: the handshake completed. */
  secure?: boolean;
  tlsProtocol?: string;
  error?: string;
}

export function exchange(options: ExchangeOptions): Promise<ExchangeResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let phase: "connect" | "greeting" | "answer" = "connect";
    let connected = false;
    let secure = false;
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    let socket: Socket | TLSSocket;

    const finish = (closed: boolean, error?: string) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      const tlsProtocol = secure ? ((socket as TLSSocket).getProtocol?.() ?? undefined) : undefined;
      if (options.farewell && phase === "answer" && !closed && !socket.destroyed)
        socket.write(options.farewell);
      socket.destroy();
      const answer = Buffer.concat(chunks, size);
      resolve({ connected, answer, closed, secure: options.tls ? secure : undefined, tlsProtocol, error });
    };
    const wait = (ms: number, then: () => void) => {
      clearTimeout(timer);
      timer = setTimeout(then, ms);
    };
    const onAbort = () => finish(false, "cancelled");
    if (options.signal.aborted) {
      resolve({ connected: false, answer: Buffer.alloc(0), closed: false, error: "cancelled" });
      return;
    }
    options.signal.addEventListener("abort", onAbort, { once: true });

    const startAnswer = () => {
      phase = "answer";
      if (options.send && options.send.length > 0) socket.write(options.send);
      wait(options.firstByteMs, () => finish(false));
    };
    const onReady = () => {
      connected = true;
      if (options.handshakeOnly) finish(false);
      else if (options.greetingFirst) {
        phase = "greeting";
        wait(options.firstByteMs, () => finish(false, "no greeting"));
      } else startAnswer();
    };

    if (options.tls) {
      socket = tlsConnect({
        host: options.host,
        port: options.port,
        rejectUnauthorized: false,
        secureContext: lenientContext(),
      });
      // Once connected, a server that does not answer the ClientHello is given the first-byte wait.
      socket.once("connect", () => wait(options.firstByteMs, () => finish(false, "no handshake")));
      socket.once("secureConnect", () => {
        secure = true;
        onReady();
      });
    } else {
      socket = tcpConnect({ host: options.host, port: options.port });
      socket.once("connect", onReady);
    }
    wait(options.connectMs, () => finish(false, "timeout"));
    let greeting = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      if (finished) return;
      if (phase === "greeting") {
        // A greeting is a line (or several, "220-…"); its last line ends with "\n" and has no "-" continuation.
        greeting = Buffer.concat([greeting, chunk]).subarray(0, options.maxBytes);
        const lines = greeting.toString("latin1").split("\n");
        const last = lines.at(-2);
        if (lines.length >= 2 && last !== undefined && !/^\d{3}-/.test(last)) startAnswer();
        else if (greeting.length >= options.maxBytes) finish(false, "greeting too long");
        else wait(options.firstByteMs, () => finish(false, "no greeting"));
        return;
      }
      const room = options.maxBytes - size;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(part);
      size += part.length;
      if (size >= options.maxBytes) return finish(false);
      if (options.complete?.(Buffer.concat(chunks, size))) return finish(false);
      wait(options.idleMs, () => finish(false));
    });
    socket.once("error", (error) => finish(connected, error.message));
    socket.once("close", () => finish(true));
  });
}
