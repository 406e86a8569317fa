/** What discovery finds: entities of a kind with a name and details, and issues raised on them. */

/** Entity kinds; the wire type name is `Service::Entity::<Kind>`. */
export type EntityKind =
  | "Domain"
  | "DnsRecord"
  | "IpAddress"
  | "Nameserver"
  | "NetBlock"
  | "NetworkService"
  | "SslCertificate"
  | "Uri"
  | "Organization";

export interface EntityRef {
  kind: EntityKind;
  name: string;
}

/** An entity a module found, with what it learned about it. */
export interface FoundEntity extends EntityRef {
  details?: Record<string, unknown>;
  /** Other entities that are the same thing seen another way (a name and its addresses). */
  aliases?: EntityRef[];
  /** Recorded but not shown by default (e.g. wildcard answers). */
  hidden?: boolean;
}

/** A weakness a module found on an entity (severity 1 critical … 5 informational). */
export interface FoundIssue {
  name: string;
  prettyName: string;
  severity: 1 | 2 | 3 | 4 | 5;
  confidence: "confirmed" | "potential";
  category: string;
  description: string;
  remediation: string;
  references: Array<{ type: string; uri: string }>;
  entity: EntityRef;
  /** Proof and issue-specific fields (request, uri, status, affected_software, …). */
  details: Record<string, unknown>;
}

/** The kinds that are names in DNS: what the domains result lists. */
export const DOMAIN_KINDS = ["Domain", "Nameserver", "DnsRecord"];
