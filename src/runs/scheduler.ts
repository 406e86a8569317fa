/**
 * The scheduler, one in every server process. Each tick it fires the automatic runs that are due (see
 * scan-rate.ts), fails runs past their time limit whose worker is gone, clears what ended runs left
 * (staging written late, task rows whose clearing was cut short), and, with a durable queue, re-queues
 * work that went quiet (a job lost between the store and Redis).
 *
 * Exactly once: a due collection is fired by a compare-and-set on its `last_fired_at` inside the same
 * transaction that creates the run, so of several processes seeing it due, one creates the run and the
 * others change nothing.
 */

import type { RunsRepository } from "../store/runs.ts";
import { type RunCoordinator, SCHEDULED_PRIORITY } from "./coordinator.ts";
import { scanInterval } from "./scan-rate.ts";

export interface SchedulerOptions {
  repository: RunsRepository;
  coordinator: RunCoordinator;
  intervalSeconds: number;
  /** With a durable queue: re-queue active runs with no progress for this long. */
  requeueIdleAfterSeconds?: number;
}

export interface TickResult {
  fired: number;
  expired: number;
}

export class Scheduler {
  private readonly options: SchedulerOptions;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<TickResult> | undefined;
  private stopped = false;

  constructor(options: SchedulerOptions) {
    this.options = options;
  }

  /** Ticks now (catching up on what fell due while no server ran) and then every interval. */
  start(): void {
    const loop = async () => {
      await this.tick().catch((error) =>
        this.options.coordinator.log.warn(`scheduler tick failed: ${error.message}`),
      );
      if (!this.stopped) this.timer = setTimeout(loop, this.options.intervalSeconds * 1000).unref();
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking?.catch(() => {});
  }

  /** One pass; a tick asked for while one runs shares it. */
  tick(): Promise<TickResult> {
    this.ticking ??= this.pass().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async pass(): Promise<TickResult> {
    const { repository, coordinator, requeueIdleAfterSeconds } = this.options;
    const fired = await this.fireDue();
    const expired = await coordinator.expireOverdue();
    await coordinator.failLost();
    await repository.discardEndedStaging();
    await coordinator.clearAllEnded();
    if (requeueIdleAfterSeconds !== undefined) {
      const before = new Date(Date.now() - requeueIdleAfterSeconds * 1000).toISOString();
      await coordinator.resume(await repository.idle(before));
    }
    return { fired, expired };
  }

  private async fireDue(): Promise<number> {
    const { repository, coordinator } = this.options;
    const now = Date.now();
    let fired = 0;
    for (const candidate of await repository.scheduleCandidates()) {
      const interval = scanInterval(candidate.accountStatus, candidate.scanRate);
      if (interval === null) continue;
      // Counted from the later of its last automatic run and its newest run of any kind: a collection run
      // by hand a minute ago (or just created and run) is not due again until the interval has passed.
      const since = [candidate.lastFiredAt, candidate.lastRunAt]
        .filter((time): time is string => time !== null)
        .map((time) => Date.parse(time));
      if (since.length > 0 && Math.max(...since) + interval * 1000 > now) continue;
      const run = await repository.fireSchedule(
        candidate.collectionId,
        candidate.lastFiredAt,
        SCHEDULED_PRIORITY,
      );
      if (run) {
        coordinator.dispatch(run);
        fired++;
      }
    }
    return fired;
  }
}
