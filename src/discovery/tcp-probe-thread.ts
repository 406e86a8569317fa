/**
 * A probe thread (see tcp-probe-pool.ts): runs the turns it is sent and answers in batches.
 */
import { parentPort } from "node:worker_threads";
import { ConnectProbes } from "./tcp-connect.ts";
import { Batcher, type FromProbeThread, type ToProbeThread } from "./tcp-probe-pool.ts";

if (!parentPort) throw new Error("tcp-probe-thread.ts runs as a worker thread of the probe pool");
const port = parentPort;

// Every error this thread sees is a probe's outcome raised from a libuv callback (ECONNREFUSED and
// the like), whose stack is one frame inside node:net and is never shown; capturing and formatting it
// (Node's stream destroy reads `error.stack`) was about a third of the thread's JavaScript time. The
// limit is per isolate: no other code runs here.
Error.stackTraceLimit = 0;

const engine = new ConnectProbes();
type Answer = Extract<FromProbeThread, { kind: "outcomes" }>["outcomes"][number];
const answers = new Batcher<Answer>((outcomes) =>
  port.postMessage({ kind: "outcomes", outcomes } satisfies FromProbeThread),
);

port.on("message", (message: ToProbeThread) => {
  if (message.kind === "cancel") for (const id of message.ids) engine.cancel(id);
  else
    for (const { id, turn } of message.turns)
      engine.run(id, turn, (outcome) => answers.push({ id, outcome }));
});
port.postMessage({ kind: "ready" } satisfies FromProbeThread);
