/**
 * Completions that ride with the next task's start. A task done gives its slot back (the embedded queue's
 * pool of waiting jobs) and waits here with what it found and its follow-ups; the next task to start in
 * this process takes every waiting completion into its own start: one statement on PostgreSQL, one
 * commit on SQLite, instead of a statement or commit of its own for each completion. When no task starts within RIDE_WAIT_MS, the waiting completions are written on their own,
 * together. A completion with many follow-ups (more than RIDING_FOLLOW_UPS) or rows (more than
 * STAGING_PIECE in all) does not ride: it is written on its own, a large one in pieces
 * (RunsRepository.completeTask).
 *
 * A job ends only once its completion is written, so a failure to write it reaches the job as before
 * (an outage defers it; an error fails the attempt).
 */
import type { TaskRecord } from "../core/run-work.ts";
import { STAGING_PIECE, type StagingRows, stagingSize } from "../store/entities.ts";
import type { DoneTask, RunsRepository } from "../store/runs.ts";

/** Longest a completion waits for a task's start to ride with. */
export const RIDE_WAIT_MS = 20;

/** Follow-ups a riding completion may bring: a start's statement stays small. */
export const RIDING_FOLLOW_UPS = 64;

/** Whether a completion is small enough to ride with a start's statement (see the file's comment). */
export const mayRide = (followUps: readonly unknown[], found: StagingRows | undefined) =>
  followUps.length <= RIDING_FOLLOW_UPS &&
  followUps.length + (found ? stagingSize(found) : 0) <= STAGING_PIECE;

/** What a completion's ride wrote: whether it marked the task done, and its follow-ups new to the run. */
export interface Ridden {
  completed: boolean;
  added: number[];
}

interface Rider {
  task: DoneTask;
  resolve(ridden: Ridden): void;
  reject(error: unknown): void;
}

export class RidingCompletions {
  readonly #repository: RunsRepository;
  readonly #worker: string;
  #waiting: Rider[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(repository: RunsRepository, worker: string) {
    this.#repository = repository;
    this.#worker = worker;
  }

  /** Waits for the task's completion to be written; answers what it wrote. */
  ride(task: DoneTask): Promise<Ridden> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ task, resolve, reject });
      this.#timer ??= setTimeout(() => void this.flush(), RIDE_WAIT_MS);
    });
  }

  /** `RunsRepository.beginTask`, with the completions waiting now in the same statement or commit. */
  async begin(taskId: number, options: { uncounted?: boolean }): Promise<TaskRecord | undefined> {
    const riders = this.#take();
    if (riders.length === 0) return this.#repository.beginTask(taskId, this.#worker, options);
    try {
      const written = await this.#repository.completeAndBegin(
        riders.map((rider) => rider.task),
        this.#worker,
        { taskId, ...options },
      );
      settle(riders, written);
      return written.task;
    } catch (error) {
      for (const rider of riders) rider.reject(error);
      // Whatever failed (a rider's rows, the database), this task's start is tried on its own.
      return this.#repository.beginTask(taskId, this.#worker, options);
    }
  }

  /** Writes the waiting completions now, on their own. */
  async flush(): Promise<void> {
    const riders = this.#take();
    if (riders.length === 0) return;
    try {
      settle(
        riders,
        await this.#repository.completeAndBegin(
          riders.map((rider) => rider.task),
          this.#worker,
        ),
      );
    } catch (error) {
      for (const rider of riders) rider.reject(error);
    }
  }

  #take(): Rider[] {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const riders = this.#waiting;
    this.#waiting = [];
    return riders;
  }
}

function settle(riders: Rider[], written: { completed: Set<number>; added: Map<number, number[]> }): void {
  for (const { task, resolve } of riders)
    resolve({ completed: written.completed.has(task.taskId), added: written.added.get(task.taskId) ?? [] });
}
