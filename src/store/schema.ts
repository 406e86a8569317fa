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
  vuln_cves: VulnCvesTable;
  vuln_cpe_matches: VulnCpeMatchesTable;
  vuln_kev: VulnKevTable;
  vuln_imports: VulnImportsTable;
  audit_log: AuditLogTable;
}
