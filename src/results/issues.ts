/**
 * The issues result: each weakness found, in the spec's Issue shape. The issue-specific proof
 * (request, status, uri, insecure_resource_url, affected_software, …) is kept in `details` next to
 * the issue's own identity, severity and text, as the spec's samples show.
 */
import { type Static, Type } from "typebox";
import { entityTypeName, formatDecimalExponent, formatTimestamp } from "../core/formats.ts";
import type { FindingRecord } from "../store/entities.ts";

export const IssueItem = Type.Object({
  id: Type.String(),
  name: Type.String({
    description: 'Issue identifier, e.g. "exposed_git_repository", "inferred_cve_2021_41773".',
  }),
  pretty_name: Type.String(),
  entity_type: Type.String({ description: "Service::Entity::<Kind> of the entity the issue is on." }),
  entity_name: Type.String(),
  organization: Type.String(),
  first_seen: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
  last_seen: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
  alias_group_id: Type.String({ description: "Decimal-exponent number: the alias group of the entity." }),
  confidence: Type.String({ enum: ["confirmed", "potential"] }),
  severity: Type.String({ description: "Decimal-exponent number, 1 (critical) … 5 (informational)." }),
  description: Type.String(),
  scoped: Type.Boolean(),
  details: Type.Record(Type.String(), Type.Unknown(), {
    description:
      "severity, pretty_name, name, description, remediation, category, references, and the proof: request {method, url, headers, hostname}, status, uri, insecure_resource_url, affected_software, …",
  }),
});

/** A stored issue as the view reads it: the finding, and the organisation of the entity it is on. */
export type IssueRecord = FindingRecord & { organization: string };

export function issueItem(issue: IssueRecord): Static<typeof IssueItem> {
  const severity = formatDecimalExponent(issue.severity);
  return {
    id: String(issue.id),
    name: issue.name,
    pretty_name: issue.prettyName,
    entity_type: entityTypeName(issue.entityKind),
    entity_name: issue.entityName,
    organization: issue.organization,
    first_seen: formatTimestamp(issue.firstSeen),
    last_seen: formatTimestamp(issue.lastSeen),
    alias_group_id: formatDecimalExponent(issue.aliasGroup),
    confidence: issue.confidence,
    severity,
    description: issue.description,
    scoped: issue.scoped,
    details: {
      ...issue.details,
      name: issue.name,
      pretty_name: issue.prettyName,
      severity,
      category: issue.category,
      description: issue.description,
      remediation: issue.remediation,
      references: issue.references,
    },
  };
}
