/**
 * The seam between the run machinery (src/runs) and what a run does (src/discovery).
 *
 * A run is a set of tasks kept in the store. The run machinery owns their life: it asks the work for
 * the first tasks, hands each task to `execute` on some worker (in-process or BullMQ), records the
 * follow-up tasks it returns — a task whose key the run already has is dropped, so the same work is
 * never done twice in a run — counts progress, and when no task is left calls `finish` exactly once.
 * A run that fails or is cancelled never reaches `finish`, so its partial work never replaces results.
 */

import type { Metrics } from "./metrics.ts";
import type { RunSettings } from "./run-settings.ts";

/** A unit of work as the work describes it. */
export interface TaskSpec {
  /** Unique within a run: the same key twice is the same work (e.g. "dns:Domain:acme.test"). */
  key: string;
  /** Which handler runs it (e.g. a discovery module's name). */
  kind: string;
  /** JSON-serialisable input of the task. */
  payload: unknown;
  /** Distance from the seeds, for depth limits and provenance. */
  depth: number;
}

/** A task as stored, handed back to `execute`. */
export interface TaskRecord extends TaskSpec {
  id: number;
  runId: number;
  attempts: number;
}

export interface RunInfo {
  id: number;
  collectionId: number;
  collectionName: string;
  accountId: number;
  /**
   * The discovery settings fixed when the run was created (core/run-settings.ts); absent for runs created
   * before they were stored, which use the settings of the process working on them.
   */
  settings?: RunSettings;
  /** How many tasks the run has made so far (all of them once it finishes): how large its finish will be. */
  tasks?: number;
}

/**
 * A task's outcome when the work leaves what it found to be written with the task's completion (one
 * statement or transaction with it, instead of one of its own). `found` is the store's staging rows
 * (`StagingRows` of store/entities.ts), carried by the run machinery without looking inside.
 */
export interface TaskOutcome {
  followUps: TaskSpec[];
  found?: unknown;
}

export interface RunWork {
  /** The tasks a run starts with (from the collection's seeds). */
  plan(run: RunInfo): Promise<TaskSpec[]>;
  /**
   * Does one task and answers its follow-up tasks, or an outcome with what it found left to be written
   * with the task's completion. Must respect the signal (cancel, time limit, shutdown).
   */
  execute(task: TaskRecord, run: RunInfo, signal: AbortSignal): Promise<TaskSpec[] | TaskOutcome>;
  /**
   * Whether tasks of this kind mostly wait on the network (a port scan of an address that never
   * answers waits its timeout): the embedded queue runs them beside its task slots, not in them.
   */
  waits?(kind: string): boolean;
  /** Called once when every task is done: make this run's findings the collection's results. */
  finish(run: RunInfo): Promise<void>;
  /** Registers the work's own metrics (e.g. discovery errors) once, in a process that serves /metrics. */
  instrument?(metrics: Metrics): void;
  /** Lets go of what the work holds (a worker thread), once no task runs any more. */
  close?(): Promise<void>;
}
