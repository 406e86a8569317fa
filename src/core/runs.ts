/** A run's states and a collection's scan rates: the words the API, the store and the dashboard share. */

export type RunStatus = "queued" | "started" | "finished" | "failed" | "cancelled";
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "started", "finished", "failed", "cancelled"];
/** A run in these states holds its collection: no second one is made, forced or scheduled. */
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ["queued", "started"];

/** How often a collection runs by itself (src/runs/scan-rate.ts says what each means). */
export const SCAN_RATES = ["auto", "on_demand", "daily", "weekly", "monthly"] as const;
export type ScanRate = (typeof SCAN_RATES)[number];
