/**
 * The discovery thread (module-thread.ts starts it): the process's modules, built as the process builds
 * them, run on the tasks it is sent; product look-ups go back to the process, which holds the store.
 */
import { parentPort, workerData } from "node:worker_threads";
import { setBounded } from "../core/bounded-map.ts";
import type { MatchedCve } from "../store/vulns.ts";
import type { CveLookup } from "./fingerprint/fingerprint.ts";
import { useInstalledRecog } from "./fingerprint/recog.ts";
import { useIpDatabases } from "./ip-database.ts";
import { LocalModules, type RunDescription } from "./module-run.ts";
import {
  DESCRIBED_RUNS,
  FOUND_PART,
  type FromThread,
  type ModuleThreadOptions,
  type ToThread,
} from "./module-thread.ts";
import { discoveryModules } from "./modules.ts";

if (!parentPort)
  throw new Error("module-thread-entry.ts runs as a worker thread (module-thread.ts starts it)");
const port = parentPort;
const options = workerData as Omit<ModuleThreadOptions, "cves">;
const send = (message: FromThread) => port.postMessage(message);

const lookups = new Map<number, { resolve(matched: MatchedCve[]): void; reject(error: Error): void }>();
let nextLookup = 1;
const cves: CveLookup = {
  matchCpe: (cpe) =>
    new Promise((resolve, reject) => {
      const id = nextLookup++;
      lookups.set(id, { resolve, reject });
      send({ type: "cves", id, cpe });
    }),
};

useIpDatabases(options);
useInstalledRecog(options);
const modules = new LocalModules(discoveryModules({ cves, fingerprintRules: options.fingerprintRules }));
const runs = new Map<number, RunDescription>();
const running = new Map<number, AbortController>();

port.on("message", (message: ToThread) => {
  switch (message.type) {
    case "run":
      setBounded(runs, message.run.id, message.run, DESCRIBED_RUNS);
      return;
    case "forget":
      runs.delete(message.runId);
      modules.forget(message.runId);
      return;
    case "abort":
      running.get(message.id)?.abort();
      return;
    case "cves": {
      const lookup = lookups.get(message.id);
      lookups.delete(message.id);
      if (message.matched) lookup?.resolve(message.matched);
      else lookup?.reject(new Error(message.error ?? "the vulnerability look-up failed"));
      return;
    }
    case "task": {
      const run = runs.get(message.runId);
      if (!run) {
        send({ type: "done", id: message.id, error: `run ${message.runId} was not described to the thread` });
        return;
      }
      const controller = new AbortController();
      running.set(message.id, controller);
      modules
        .run(message.task, run, controller.signal)
        .then(
          (output) => {
            // A large answer's entities go ahead in parts, each parsed in a turn of its own over there.
            const { found } = output;
            let sent = 0;
            for (; found.length - sent > FOUND_PART; sent += FOUND_PART)
              send({
                type: "found",
                id: message.id,
                found: JSON.stringify(found.slice(sent, sent + FOUND_PART)),
              });
            send({
              type: "done",
              id: message.id,
              output: JSON.stringify({ ...output, found: found.slice(sent) }),
            });
          },
          (error: Error) => send({ type: "done", id: message.id, error: error.message }),
        )
        .finally(() => running.delete(message.id));
    }
  }
});
