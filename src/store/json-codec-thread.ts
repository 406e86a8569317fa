/**
 * Many JSON values encoded as `encodeJson` encodes them, on a thread of their own. Each compressed value
 * costs zlib's set-up with the preset dictionary (about 12 µs, json-codec.ts), and the merge of a large
 * run writes hundreds of thousands of values: on the main thread that was about half its time, while the
 * discovery is over and the other core has nothing to do. The merge hands each page's values here and
 * goes on with the next page meanwhile. One thread per process, made at the first large batch and
 * holding the process open only while it has work; should it fail, values are encoded here instead.
 */
import { Worker } from "node:worker_threads";
import { encodeJson } from "./json-codec.ts";

/** Fewer values than this are encoded at once, here: a message costs more than they do. */
const THREAD_FROM = 32;

export interface EncodeRequest {
  id: number;
  jsons: string[];
}

/** The encoded values end to end in one buffer (moved, not copied), and where each ends. */
export interface EncodeReply {
  id: number;
  buffer?: ArrayBuffer;
  ends?: number[];
  error?: string;
}

interface Pending {
  resolve(values: Buffer[]): void;
  reject(error: Error): void;
}

let worker: Worker | undefined;
let broken = false;
let nextId = 0;
const pending = new Map<number, Pending>();

function thread(): Worker | undefined {
  if (worker || broken) return worker;
  const started = new Worker(new URL("./json-codec-thread-entry.ts", import.meta.url), {
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
  started.unref();
  started.on("message", (reply: EncodeReply) => {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    settled(reply.id);
    if (!reply.buffer || !reply.ends) return waiting.reject(new Error(reply.error ?? "no answer"));
    const { buffer, ends } = reply;
    waiting.resolve(
      ends.map((end, i) => {
        const start = ends[i - 1] ?? 0;
        return Buffer.from(buffer, start, end - start);
      }),
    );
  });
  const lost = (why: string) => {
    if (worker !== started) return;
    worker = undefined;
    broken = true;
    const error = new Error(`the JSON encoding thread stopped (${why})`);
    for (const [id, waiting] of pending) {
      settled(id);
      waiting.reject(error);
    }
  };
  started.on("error", (error) => lost(error.message));
  started.on("exit", (code) => lost(`exit code ${code}`));
  worker = started;
  return worker;
}

/** The thread keeps the process alive only while an answer is awaited. */
function settled(id: number): void {
  pending.delete(id);
  if (pending.size === 0) worker?.unref();
}

/** `jsons` encoded as `encodeJson` would, in order; a large batch on the encoding thread. */
export async function encodeJsonMany(jsons: string[]): Promise<Buffer[]> {
  const here = () => jsons.map((json) => encodeJson(json) as Buffer);
  const target = jsons.length >= THREAD_FROM ? thread() : undefined;
  if (!target) return here();
  try {
    return await new Promise<Buffer[]>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      target.ref();
      target.postMessage({ id, jsons } satisfies EncodeRequest);
    });
  } catch {
    return here();
  }
}
