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

export interface Database {
  accounts: AccountsTable;
  teams: TeamsTable;
  users: UsersTable;
  team_members: TeamMembersTable;
  api_keys: ApiKeysTable;
  collections: CollectionsTable;
  seeds: SeedsTable;
}
