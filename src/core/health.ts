/**
 * Extra dependency checks (the queue adds Redis); each answers quickly and never throws. `detail` (what
 * failed and why) goes to the server log only: anyone can read /healthz, and error texts name hosts,
 * ports, users and databases.
 */
export type HealthCheck = () => Promise<{ ok: boolean; detail?: string }>;
