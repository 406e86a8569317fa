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

/**
 * Discovery results (migration 003). JSON columns are text on both dialects; booleans 0/1. An entity or
 * finding row is the collection's merged view; the `staged_*` rows are one run's raw findings, merged
 * into them when the run finishes, so a failed run never touches the results.
 */
/** What an entity sighting says, alike in the results and in a run's staging. */
interface EntityColumns {
  collection_id: number;
  kind: string;
  name: string;
  details: string;
  scoped: number;
  hidden: number;
  /** JSON array of {name, type}: the path from a seed. */
  ancestors: string;
}
export interface EntitiesTable extends EntityColumns {
  id: Generated<number>;
  alias_group: number;
  /** JSON array of {name, task, entity_type, entity_name, depth}. */
  task_results: string;
  first_seen: string;
  last_seen: string;
  first_run_id: number;
  last_run_id: number;
}
/** What a finding says, kept alike in the results and in a run's staging. */
interface FindingColumns {
  name: string;
  entity_kind: string;
  entity_name: string;
  pretty_name: string;
  severity: number;
  confidence: string;
  category: string;
  description: string;
  remediation: string;
  /** JSON array of {type, uri}. */
  reference_links: string;
  details: string;
  scoped: number;
}
export interface FindingsTable extends FindingColumns {
  id: Generated<number>;
  collection_id: number;
  first_seen: string;
  last_seen: string;
  first_run_id: number;
  last_run_id: number;
}
export interface StagedEntitiesTable extends EntityColumns {
  id: Generated<number>;
  run_id: number;
  depth: number;
  /** JSON array of {kind, name}: entities that are the same thing seen another way. */
  aliases: string;
  /** JSON TaskResult, or null for a seed. */
  task_result: string | null;
  seen_at: string;
}
export interface StagedFindingsTable extends FindingColumns {
  id: Generated<number>;
  run_id: number;
  collection_id: number;
  seen_at: string;
}
export interface RunNotesTable {
  id: Generated<number>;
  run_id: number;
  collection_id: number;
  message: string;
  created_at: string;
}
/** Which run the collection's results are from: the latest finished one. */
export interface CollectionResultsTable {
  collection_id: number;
  run_id: number;
  finished_at: string;
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
  staged_entities: StagedEntitiesTable;
  staged_findings: StagedFindingsTable;
  run_notes: RunNotesTable;
  collection_results: CollectionResultsTable;
}
