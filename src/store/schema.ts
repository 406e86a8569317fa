/** The typed shape of every table, as the repositories see it. */
import type { ColumnType, Generated } from "kysely";

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
  /** The scan profile as JSON text (core/scan-profile.ts); null: the server's settings. */
  scan_profile: string | null;
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

/**
 * Discovery results (migration 003). JSON columns are text in a run's staging; in the results they are
 * stored through json-codec.ts (migration 017). Booleans 0/1. An entity or finding row is the
 * collection's merged view; the `staged_*` rows are one run's raw findings, merged into them when the run
 * finishes, so a failed run never touches the results.
 */
/**
 * A JSON column of the results (migration 017): written as json-codec.ts's bytes, read as bytes, or as the
 * plain JSON text of a SQLite row written before; `decodeJson` reads both.
 */
export type StoredJson = ColumnType<string | Uint8Array, Uint8Array, Uint8Array>;
/** What an entity sighting says, alike in the results and in a run's staging. */
interface EntityColumns {
  collection_id: number;
  kind: string;
  name: string;
  scoped: number;
  hidden: number;
}
/**
 * One version of an entity (migration 008): its content held unchanged for every finished run from
 * `version_run_id` to `last_run_id`. `latest` = 1 on the newest version of each entity.
 */
export interface EntitiesTable extends EntityColumns {
  id: Generated<number>;
  details: StoredJson;
  /** JSON array of {name, type}: the path from a seed. */
  ancestors: StoredJson;
  alias_group: number;
  /** JSON array of {name, task, entity_type, entity_name, depth}. */
  task_results: StoredJson;
  first_seen: string;
  /** The last sighting in the version's last run. */
  last_seen: string;
  first_run_id: number;
  last_run_id: number;
  version_run_id: number;
  /** The id of the entity's first version: stable across versions. */
  entity_id: number | null;
  latest: number;
  /** Hash of the versioned content; a run seeing a different one starts a new version. */
  content_hash: string;
  /** Services and applications: the IP address they answer on, and their port. */
  address: string | null;
  port: number | null;
}
/** The products a version of a service or application runs. */
export interface EntityProductsTable {
  id: Generated<number>;
  collection_id: number;
  entity_row_id: number;
  product: string;
  version: string;
  /** "<product> <version>" (or the product alone): the products result's `product`. */
  label: string;
}
/** The CVEs inferred for a version of a service or application, with the product that carries each. */
export interface EntityVulnsTable {
  id: Generated<number>;
  collection_id: number;
  entity_row_id: number;
  cve_id: string;
  product: string;
}
/** What a finding says about its entity, kept alike in the results and in a run's staging. */
interface FindingColumns {
  name: string;
  entity_kind: string;
  entity_name: string;
  pretty_name: string;
  severity: number;
  confidence: string;
  category: string;
  scoped: number;
}
/** What a finding's check says, the same for every finding of it: staged with each, stored once (finding_texts). */
export interface FindingTextColumns {
  description: string;
  remediation: string;
  /** JSON array of {type, uri}. */
  reference_links: string;
}
/** A check's texts, stored once per collection and named by their hash (migration 015). */
export interface FindingTextsTable extends FindingTextColumns {
  collection_id: number;
  hash: string;
}
/** One version of a finding, like EntitiesTable; its texts are in finding_texts under `text_hash`. */
export interface FindingsTable extends FindingColumns {
  details: StoredJson;
  /** The key of its texts in finding_texts (always set; null only in the type, as the column was added). */
  text_hash: string | null;
  id: Generated<number>;
  collection_id: number;
  first_seen: string;
  last_seen: string;
  first_run_id: number;
  last_run_id: number;
  version_run_id: number;
  /** The id of the finding's first version: the Issue's stable `id`. */
  issue_id: number | null;
  latest: number;
  content_hash: string;
  /**
   * Findings on services and applications: the service the entity runs on, "address:port" ("[v6]:port")
   * as of this version (migration 013); issues with the same name and endpoint are one finding.
   */
  endpoint: string | null;
}
export interface StagedEntitiesTable extends EntityColumns {
  id: Generated<number>;
  details: string;
  /** JSON array of {name, type}: the path from a seed. */
  ancestors: string;
  run_id: number;
  depth: number;
  /** JSON array of {kind, name}: entities that are the same thing seen another way. */
  aliases: string;
  /** JSON TaskResult, or null for a seed. */
  task_result: string | null;
  seen_at: string;
}
export interface StagedFindingsTable extends FindingColumns, FindingTextColumns {
  id: Generated<number>;
  details: string;
  run_id: number;
  collection_id: number;
  seen_at: string;
}
export interface RunNotesTable {
  id: Generated<number>;
  run_id: number;
  collection_id: number;
  /** The discovery module that wrote it, `plan` for the run's seeds, `other` before migration 011. */
  kind: Generated<string>;
  message: string;
  created_at: string;
}
/** Which run the collection's results are from: the latest finished one. */
export interface CollectionResultsTable {
  collection_id: number;
  run_id: number;
  finished_at: string;
}

import type { RunStatus } from "../core/runs.ts";

export type { RunStatus } from "../core/runs.ts";
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
  /** JSON of the run's discovery settings (core/run-settings.ts), fixed at creation; null before migration 011. */
  settings: string | null;
}
/** What is kept of a run's tasks once it has ended: per worker, the tasks it completed and their attempts. */
export interface RunSourcesTable {
  run_id: number;
  collection_id: number;
  source: string;
  target: string;
  /** A SourceStatus (src/core/sources.ts) as JSON text. */
  status: string;
  created_at: string;
}
export interface RunWorkersTable {
  run_id: number;
  worker: string;
  tasks: number;
  attempts: number;
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
/**
 * A row per started run whose working tables (tasks, staging) are intact, from its start until it ends.
 * On PostgreSQL the table is unlogged like them (migration 020): a server crash empties it with them, and
 * a run without its row is failed rather than finished on what is left.
 */
export interface RunWorkingMarksTable {
  run_id: number;
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

/** A webhook of a collection (migration 007); `events` is a JSON array of event names. */
export interface WebhooksTable {
  id: Generated<number>;
  collection_id: number;
  url: string;
  secret: string;
  events: string;
  severity_threshold: number;
  created_at: string;
  created_by: string;
}
export type DeliveryStatus = "pending" | "delivered" | "failed";
/** One event for one webhook: outbox entry, retry state and log line. */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  webhook_id: number;
  run_id: number | null;
  event: string;
  /** The JSON body sent, byte for byte. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string;
  /** Claimed by a process until then. */
  locked_until: string | null;
  created_at: string;
  last_attempt_at: string | null;
  delivered_at: string | null;
  response_status: number | null;
  error: string | null;
}
export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  attempted_at: string;
  response_status: number | null;
  error: string | null;
  duration_ms: number;
}
export interface WebhookRunEventsTable {
  run_id: number;
  enqueued_at: string;
}

/** The third parties of a finished run, decided at its finish (a JSON list of connections). */
export interface RunConnectionsTable {
  run_id: number;
  collection_id: number;
  connections: string;
  decided_at: string;
}

export interface Database {
  accounts: AccountsTable;
  teams: TeamsTable;
  users: UsersTable;
  team_members: TeamMembersTable;
  api_keys: ApiKeysTable;
  collections: CollectionsTable;
  seeds: SeedsTable;
  entities: EntitiesTable;
  findings: FindingsTable;
  finding_texts: FindingTextsTable;
  staged_entities: StagedEntitiesTable;
  staged_findings: StagedFindingsTable;
  run_notes: RunNotesTable;
  collection_results: CollectionResultsTable;
  runs: RunsTable;
  run_tasks: RunTasksTable;
  run_workers: RunWorkersTable;
  run_sources: RunSourcesTable;
  run_working_marks: RunWorkingMarksTable;
  run_schedules: RunSchedulesTable;
  vuln_cves: VulnCvesTable;
  vuln_cpe_matches: VulnCpeMatchesTable;
  vuln_kev: VulnKevTable;
  vuln_imports: VulnImportsTable;
  audit_log: AuditLogTable;
  entity_products: EntityProductsTable;
  entity_vulns: EntityVulnsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_run_events: WebhookRunEventsTable;
  run_connections: RunConnectionsTable;
}
