/**
 * Completions that ride with the next task's start. A task done without follow-ups gives its slot back
 * (the embedded queue's pool of waiting jobs) and waits here; the next task to start in this process
 * takes every waiting completion into its own start: one statement on PostgreSQL, one commit on SQLite,
 * where each completion was a statement or commit of its own (docs/scale.md, Session 9). When no task
 * starts within RIDE_WAIT_MS, the waiting completions are written on their own, together.
 *
 * A job ends only once its completion is written, so a failure to write it reaches the job as before
 * (an outage defers it; an error fails the attempt).
 */
import type { TaskRecord } from "../core/run-work.ts";
import type { DoneTask, RunsRepository } from "../store/runs.ts";

/** Longest a completion waits for a task's start to ride with. */
export const RIDE_WAIT_MS = 20;

interface Rider {
  task: DoneTask;
  resolve(completed: boolean): void;
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

  /** Waits for the task's completion to be written; answers whether it marked the task done. */
  ride(task: DoneTask): Promise<boolean> {
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
      const { task, completed } = await this.#repository.completeAndBegin(
        riders.map((rider) => rider.task),
        this.#worker,
        { taskId, ...options },
      );
      for (const rider of riders) rider.resolve(completed.has(rider.task.taskId));
      return task;
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
      const { completed } = await this.#repository.completeAndBegin(
        riders.map((rider) => rider.task),
        this.#worker,
      );
      for (const rider of riders) rider.resolve(completed.has(rider.task.taskId));
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
