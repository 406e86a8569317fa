/** Shapes the dashboard reads from the API (see the OpenAPI document at /docs). */

import { ACTIVE_RUN_STATUSES } from "../../core/runs.ts";
import type { ScanProfile } from "../../core/scan-profile.ts";
import type { Named, TaskResult } from "./provenance.ts";

export { SCAN_RATES } from "../../core/runs.ts";

export const SCAN_RATE_LABELS: Record<string, string> = {
  auto: "Automatic (follows the account)",
  on_demand: "Only when run by hand",
  daily: "Daily",
  weekly: "Weekly",
  monthly: "Monthly",
};

export interface Collection {
  name: string;
  team_id: number;
  scan_rate: string;
  scan_profile?: ScanProfile | null;
  created_at: string;
  updated_at: string;
  seed_count: number;
  seeds: Array<{ type: string; name: string }>;
}

export interface Run {
  id: number | string;
  status: string;
  created_at: string;
  priority?: number;
  /** forced (the API) or scheduled. */
  trigger?: string;
  tasks_total?: number;
  tasks_done?: number;
  started_at?: string | null;
  finished_at?: string | null;
  /** Why it failed or who cancelled it. */
  error?: string | null;
  [field: string]: unknown;
}

export const ACTIVE_RUN: ReadonlySet<string> = new Set(ACTIVE_RUN_STATUSES);

export interface Entity {
  name: string;
  type: string;
  first_seen?: string;
  last_seen?: string;
  hidden?: boolean;
  scoped?: boolean;
  alias_group?: string;
  ancestors?: Named[];
  task_results?: TaskResult[];
  [field: string]: unknown;
}

export interface Application extends Entity {
  organization?: string;
  details: Record<string, unknown> & {
    code?: string;
    title?: string;
    uri?: string;
    headers?: string[];
    redirect_chain?: string[];
    fingerprint?: Array<Record<string, unknown>>;
    ip_address?: string;
    port?: string;
    service?: string;
    /** [name, version] pairs. */
    products?: unknown[][];
    certificate?: Record<string, unknown>;
  };
}

export interface Domain extends Entity {
  name_server?: boolean;
  resolves?: boolean;
  addresses?: string[];
  records?: Record<string, string[]>;
  spf?: string;
  dmarc?: string;
  wildcard?: boolean;
  wildcard_addresses?: string[];
  zone_transfer?: boolean;
  certificates?: string[];
}

export interface NetBlock extends Entity {
  asn?: string;
  organization?: string;
  net_name?: string;
  geolocation?: Record<string, string>;
  hosts?: string[];
}

/** An item of the services result: an open port with what it answered. */
export interface ServiceRow {
  name: string;
  address: string;
  port: number;
  protocol: string;
  service: string;
  product: string;
  version: string;
  tls: boolean;
  [field: string]: unknown;
}

export interface Host {
  ip: string;
  resolutions?: unknown[];
  first_seen?: string;
  last_seen?: string;
  net_name?: string;
  geolocation?: Record<string, string>;
  ports?: Array<{ number: string; protocol: string }>;
  os?: string;
  scoped?: boolean;
  hidden?: boolean;
  [field: string]: unknown;
}

export interface Issue {
  id: string;
  name: string;
  pretty_name: string;
  entity_type: string;
  entity_name: string;
  severity: string;
  confidence: string;
  description?: string;
  first_seen?: string;
  last_seen?: string;
  scoped?: boolean;
  details: Record<string, unknown> & {
    request?: { headers?: Record<string, string>; hostname?: string; method?: string; url?: string };
    remediation?: string;
    references?: Array<{ type?: string; uri: string }>;
    category?: string;
    proof?: unknown;
    /** The service the entity runs on, "address:port". */
    endpoint?: string;
    /** With group=finding: the entities the finding was seen on (the first 100) and how many in all. */
    entities?: Array<{ entity_type: string; entity_name: string }>;
    entity_count?: number;
  };
  [field: string]: unknown;
}

export interface Vulnerability {
  name: string;
  cve: string;
  shortname?: string;
  description?: string;
  exploits?: unknown[];
  cwe?: string;
  score?: number;
  cvss_v2_score?: number;
  cvss_v3_score?: number | null;
  count?: number;
  affected?: string[];
  [field: string]: unknown;
}

export interface Product {
  product: string;
  count: string;
}

export interface Connection {
  /** The third party by registrable domain. */
  name: string;
  /** script, stylesheet, frame, form, web_resource, redirect, cname, mail, spf, dns. */
  kinds?: string[];
  hosts?: string[];
  count?: number;
  used_by?: string[];
  [field: string]: unknown;
}

/** One of the user's teams (GET /api/teams): what `team_id` may name. */
export interface Team {
  id: number;
  name: string;
  default: boolean;
}
