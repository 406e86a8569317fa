/**
 * A worker thread of the store (the log's copy-back, a run's results saved) run to its end: its last
 * message, or why it gave none (it could not start, threw, or exited without answering).
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

export function threadReply<T>(
  entry: URL,
  options: WorkerOptions & { unref?: boolean },
): Promise<{ reply?: T; error?: string }> {
  return new Promise((resolve) => {
    const { unref, ...workerOptions } = options;
    let worker: Worker;
    try {
      worker = new Worker(entry, workerOptions);
    } catch (error) {
      resolve({ error: (error as Error).message });
      return;
    }
    if (unref) worker.unref();
    let reply: T | undefined;
    let error: string | undefined;
    worker.on("message", (message: T) => {
      reply = message;
    });
    worker.on("error", (thrown) => {
      error ??= thrown.message;
    });
    worker.on("exit", (code) => resolve({ reply, error: error ?? `exit code ${code}` }));
  });
}
