/** The JSON encoding thread (json-codec-thread.ts): encodes each batch and answers it in one buffer. */
import { parentPort } from "node:worker_threads";
import { encodeJson } from "./json-codec.ts";
import type { EncodeReply, EncodeRequest } from "./json-codec-thread.ts";

parentPort?.on("message", ({ id, jsons }: EncodeRequest) => {
  try {
    const values = jsons.map(encodeJson);
    const ends: number[] = [];
    let size = 0;
    for (const value of values) {
      size += value.length;
      ends.push(size);
    }
    const bytes = new Uint8Array(size);
    for (const [i, value] of values.entries()) bytes.set(value, ends[i - 1] ?? 0);
    parentPort?.postMessage({ id, buffer: bytes.buffer, ends } satisfies EncodeReply, [bytes.buffer]);
  } catch (error) {
    parentPort?.postMessage({ id, error: (error as Error).message } satisfies EncodeReply);
  }
});
