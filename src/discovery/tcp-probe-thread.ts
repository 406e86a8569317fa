/**
 * A probe thread (see tcp-probe-pool.ts): runs the turns it is sent and answers in batches.
 */
import { parentPort } from "node:worker_threads";
import { ConnectProbes } from "./tcp-connect.ts";
import { Batcher, type FromProbeThread, type ToProbeThread } from "./tcp-probe-pool.ts";

if (!parentPort) throw new Error("tcp-probe-thread.ts runs as a worker thread of the probe pool");
const port = parentPort;

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
