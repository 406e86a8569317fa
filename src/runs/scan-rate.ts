/**
 * How often a collection runs by itself. The account's status sets the fastest allowed rate (active:
 * daily, trial: weekly, suspended/expired: never); the collection's `scan_rate` may only slow it down.
 * `auto` follows the account; `on_demand` never runs by itself; daily/weekly/monthly ask for that rate
 * and get the slower of it and the account's (trial + daily → weekly). Monthly means every 30 days.
 */
import type { AccountStatus } from "../store/schema.ts";

const DAY = 24 * 60 * 60;

/** Seconds between automatic runs allowed by the account status; null = never. */
const ACCOUNT_INTERVALS: Record<AccountStatus, number | null> = {
  active: DAY,
  trial: 7 * DAY,
  suspended: null,
  expired: null,
};

/** Seconds between automatic runs the collection asks for; undefined = whatever the account allows. */
const COLLECTION_INTERVALS: Record<string, number | null | undefined> = {
  auto: undefined,
  on_demand: null,
  daily: DAY,
  weekly: 7 * DAY,
  monthly: 30 * DAY,
};

/** Seconds between automatic runs of a collection, or null when it never runs by itself. */
export function scanInterval(status: AccountStatus, scanRate: string): number | null {
  const allowed = ACCOUNT_INTERVALS[status] ?? null;
  const asked = COLLECTION_INTERVALS[scanRate];
  if (allowed === null || asked === null) return null;
  return asked === undefined ? allowed : Math.max(allowed, asked);
}

/** Whether an account in this status may start runs at all (forced or scheduled). */
export function mayRun(status: AccountStatus): boolean {
  return (ACCOUNT_INTERVALS[status] ?? null) !== null;
}
