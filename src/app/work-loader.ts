/**
 * Which RunWork a process uses: the built-in composition (default-work.ts), or — a testing and extension
 * hook — the module named by SIGHTLINE_RUN_WORK_MODULE, which must export `createRunWork(services)`. The
 * operator sets it like any other setting; nothing from a request can reach it.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../core/config.ts";
import type { RunWork } from "../core/run-work.ts";
import type { Services } from "../store/services.ts";
import { createRunWork } from "./default-work.ts";

export async function loadRunWork(services: Services): Promise<RunWork> {
  const path = services.config.runWorkModule;
  if (!path) return createRunWork(services);
  let module: { createRunWork?: unknown };
  try {
    module = await import(pathToFileURL(resolve(path)).href);
  } catch (error) {
    throw new ConfigError(
      `SIGHTLINE_RUN_WORK_MODULE "${path}" could not be loaded: ${(error as Error).message}`,
    );
  }
  if (typeof module.createRunWork !== "function")
    throw new ConfigError(
      `SIGHTLINE_RUN_WORK_MODULE "${path}" must export a function createRunWork(services)`,
    );
  return (module.createRunWork as (services: Services) => RunWork | Promise<RunWork>)(services);
}
