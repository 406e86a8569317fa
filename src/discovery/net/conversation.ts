/**
 * A bounded TCP (or TLS) conversation with a service, for the exposure checks: send a request, read
 * until the answer is complete, the peer closes, a byte cap or the deadline — whichever comes first.
 * One deadline covers the whole conversation (connect included), so a service that trickles, floods
 * or never answers costs at most `timeoutMs` and `maxBytes`. The run's abort signal ends it at once.
 */
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { lenientContext } from "./secure-contexts.ts";

export interface ConversationOptions {
  host: string;
  port: number;
  /** The whole conversation's deadline, connect included. */
  timeoutMs: number;
  /** At most this many bytes are kept from the peer; past it the connection is closed. */
  maxBytes: number;
  signal: AbortSignal;
  /** Speak TLS (certificate unchecked: the service is looked at, not trusted). */
  tls?: boolean;
}

export class Conversation {
  readonly #socket: Socket;
  #chunks: Buffer[] = [];
  #size = 0;
  /** Bytes kept in all, across reads: the cap is on the conversation, not on one answer. */
  #total = 0;
  #ended = false;
  #timedOut = false;
  #waiter: (() => void) | undefined;
  readonly #maxBytes: number;
  readonly #timer: NodeJS.Timeout;
  readonly #onAbort: () => void;
  readonly #signal: AbortSignal;

  private constructor(socket: Socket, options: ConversationOptions) {
    this.#socket = socket;
    this.#maxBytes = options.maxBytes;
    this.#signal = options.signal;
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.close();
    }, options.timeoutMs);
    this.#onAbort = () => this.close();
    options.signal.addEventListener("abort", this.#onAbort, { once: true });
    socket.on("data", (chunk: Buffer) => {
      const room = this.#maxBytes - this.#total;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.#chunks.push(kept);
      this.#size += kept.length;
      this.#total += kept.length;
      if (this.#total >= this.#maxBytes) this.close();
      this.#wake();
    });
    socket.on("error", () => this.close());
    socket.on("close", () => this.close());
  }

  /** Connects; answers undefined when the service cannot be reached within the deadline. */
  static open(options: ConversationOptions): Promise<Conversation | undefined> {
    if (options.signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const socket = options.tls
        ? connectTls({
            host: options.host,
            port: options.port,
            rejectUnauthorized: false,
            // Old servers are exactly what is being looked at: let any of them finish a handshake.
            secureContext: lenientContext(),
          })
        : connectTcp({ host: options.host, port: options.port });
      let settled = false;
      const finish = (conversation: Conversation | undefined) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.signal.removeEventListener("abort", onAbort);
        if (!conversation) socket.destroy();
        resolve(conversation);
      };
      const timer = setTimeout(() => finish(undefined), options.timeoutMs);
      const onAbort = () => finish(undefined);
      options.signal.addEventListener("abort", onAbort, { once: true });
      socket.once(options.tls ? "secureConnect" : "connect", () => finish(new Conversation(socket, options)));
      socket.once("error", () => finish(undefined));
      socket.once("close", () => finish(undefined));
    });
  }

  send(data: Buffer | string): void {
    if (!this.#ended) this.#socket.write(data);
  }

  /**
   * The bytes received since the last read, once `complete(bytes)` says the answer is whole, or the
   * peer closed, the cap was reached or the deadline passed (then whatever had come).
   */
  async read(complete: (bytes: Buffer) => boolean = () => false): Promise<Buffer> {
    while (!this.#ended && !complete(this.#peek())) {
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
      });
    }
    const bytes = this.#peek();
    this.#chunks = [];
    this.#size = 0;
    return bytes;
  }

  /** Reads until `text` (latin1) appears in the answer. */
  readUntil(text: string | RegExp): Promise<Buffer> {
    return this.read((bytes) => {
      const seen = bytes.toString("latin1");
      return typeof text === "string" ? seen.includes(text) : text.test(seen);
    });
  }

  /** Reads at least `count` bytes (or less, if the conversation ends first). */
  readBytes(count: number): Promise<Buffer> {
    return this.read((bytes) => bytes.length >= count);
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The deadline ended it (not the peer, the cap or the run's signal). */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  close(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    this.#signal.removeEventListener("abort", this.#onAbort);
    this.#socket.destroy();
    this.#wake();
  }

  #peek(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks, this.#size)];
    return this.#chunks[0] ?? Buffer.alloc(0);
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }
}

/** Opens a conversation, runs `talk` on it, and always closes it. Undefined when unreachable. */
export async function converse<T>(
  options: ConversationOptions,
  talk: (conversation: Conversation) => Promise<T>,
): Promise<T | undefined> {
  const conversation = await Conversation.open(options);
  if (!conversation) return undefined;
  try {
    return await talk(conversation);
  } finally {
    conversation.close();
  }
}

/** Printable text of the start of an answer: non-printable bytes as \xNN, at most `length` characters. */
export function printable(bytes: Buffer, length = 300): string {
  return bytes
    .subarray(0, length * 2)
    .toString("latin1")
    .replace(/[^\x20-\x7e\n]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .slice(0, length);
}
