/** The typed shape of every table, as the repositories see it. */
import type { Generated } from "kysely";

export type AccountStatus = "trial" | "active" | "suspended" | "expired";
export const ACCOUNT_STATUSES: readonly AccountStatus[] = ["trial", "active", "suspended", "expired"];

export interface AccountsTable {
  id: Generated<number>;
  name: string;
  status: AccountStatus;
  created_at: string;
}
export interface TeamsTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  created_at: string;
}
export interface UsersTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  is_admin: number;
  default_team_id: number | null;
  created_at: string;
}
export interface TeamMembersTable {
  team_id: number;
  user_id: number;
}
export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  access_key: string;
  secret_hash: string;
  created_at: string;
  revoked_at: string | null;
}
export interface CollectionsTable {
  id: Generated<number>;
  account_id: number;
  team_id: number;
  name: string;
  scan_rate: string;
  created_at: string;
  updated_at: string;
}
export interface SeedsTable {
  id: Generated<number>;
  collection_id: number;
  type: string;
  name: string;
  created_at: string;
}

export type RunStatus = "queued" | "started" | "finished" | "failed" | "cancelled";
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "started", "finished", "failed", "cancelled"];
export type RunTrigger = "forced" | "scheduled";
export type TaskStatus = "pending" | "running" | "done";

export interface RunsTable {
  id: Generated<number>;
  collection_id: number;
  trigger: RunTrigger;
  status: RunStatus;
  priority: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** started_at + the run time limit; past it the run fails. */
  deadline_at: string | null;
  /** Set by the one process that won the right to call RunWork.finish. */
  finishing_at: string | null;
  /** Last progress (creation, start, a task done). */
  updated_at: string;
  error: string | null;
  tasks_total: number;
  tasks_done: number;
}
export interface RunTasksTable {
  id: Generated<number>;
  run_id: number;
  key: string;
  kind: string;
  /** JSON text. */
  payload: string;
  depth: number;
  status: TaskStatus;
  attempts: number;
  /** The worker running it, then the one that did it. */
  worker: string | null;
  /** The last failure, kept while the task is retried. */
  error: string | null;
  created_at: string;
  finished_at: string | null;
}
export interface RunSchedulesTable {
  collection_id: number;
  /** When the scheduler last fired a run for the collection; null = never. */
  last_fired_at: string | null;
}
/** One CVE as imported from NVD (cwe: comma-separated, NVD's primary first; reference_urls: JSON array). */
export interface VulnCvesTable {
  cve_id: string;
  description: string;
  cwe: string;
  cvss_v3_score: number | null;
  cvss_v3_vector: string | null;
  cvss_v2_score: number | null;
  cvss_v2_vector: string | null;
  published: string | null;
  last_modified: string | null;
  cisa_exploit_add: string | null;
  cisa_action_due: string | null;
  cisa_required_action: string | null;
  cisa_vulnerability_name: string | null;
  reference_urls: string;
  record_hash: string;
}
/** One vulnerable CPE match criterion of a CVE, with its version range. */
export interface VulnCpeMatchesTable {
  id: Generated<number>;
  cve_id: string;
  criteria: string;
  part: string;
  vendor: string;
  product: string;
  version: string;
  version_update: string;
  version_start_including: string | null;
  version_start_excluding: string | null;
  version_end_including: string | null;
  version_end_excluding: string | null;
}
/** One CISA Known Exploited Vulnerabilities entry (cwes: JSON array). */
export interface VulnKevTable {
  cve_id: string;
  vendor_project: string | null;
  product: string | null;
  vulnerability_name: string | null;
  date_added: string | null;
  short_description: string | null;
  required_action: string | null;
  due_date: string | null;
  known_ransomware_campaign_use: string | null;
  notes: string | null;
  cwes: string;
  record_hash: string;
}
export interface VulnImportsTable {
  id: Generated<number>;
  source: string;
  added: number;
  updated: number;
  unchanged: number;
  skipped: number;
  imported_at: string;
}

/** One administrative action (see src/audit/log.ts); details is a JSON object as text. */
export interface AuditLogTable {
  id: Generated<number>;
  at: string;
  actor: string;
  user_id: number | null;
  account_id: number | null;
  action: string;
  target: string;
  source: string;
  request_id: string | null;
  details: string;
}

export interface Database {
  accounts: AccountsTable;
  teams: TeamsTable;
  users: UsersTable;
  team_members: TeamMembersTable;
  api_keys: ApiKeysTable;
  collections: CollectionsTable;
  seeds: SeedsTable;
  runs: RunsTable;
  run_tasks: RunTasksTable;
  run_schedules: RunSchedulesTable;
  vuln_cves: VulnCvesTable;
  vuln_cpe_matches: VulnCpeMatchesTable;
  vuln_kev: VulnKevTable;
  vuln_imports: VulnImportsTable;
  audit_log: AuditLogTable;
}
