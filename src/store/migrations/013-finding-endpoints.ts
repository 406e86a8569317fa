import { sql } from "kysely";
import type { DialectMigration } from "./helpers.ts";

/**
 * The service a finding's entity runs on, `"address:port"` (`[v6]:port`), for findings on network
 * services and applications: one nginx behind a dozen names carries the same CVE once per name, and the
 * issues list can show it once (`?group=finding`) by grouping on (name, endpoint) in an index instead of
 * joining every finding to its entity. Null for findings on names, certificates and addresses.
 *
 * Existing findings take it from the version of their entity that the finding version's last run saw
 * (the `address` and `port` columns of migration 008); the merge sets it from then on, and counts it as
 * part of the finding's content (an entity moved to another address is a new version of its findings),
 * so findings on services start one new version on the first run after this migration.
 *
 * The index leads with (collection, name, endpoint) and then follows the issues list's order, so "is
 * there a member of this group before this one" is the first entries of one index range; it also holds
 * what a group's summary reads of each member (sightings, scope), so summing a group reads no rows.
 */
export const findingEndpoints: DialectMigration = {
  async up(db) {
    await db.schema.alterTable("findings").addColumn("endpoint", "text").execute();
    await sql`update findings set endpoint = (
        select case when e.address like '%:%' then '[' || e.address || ']:' else e.address || ':' end
          || cast(e.port as text)
        from entities e
        where e.collection_id = findings.collection_id
          and e.kind = findings.entity_kind
          and e.name = findings.entity_name
          and e.version_run_id <= findings.last_run_id
          and e.last_run_id >= findings.last_run_id
          and e.address is not null
          and e.port is not null
      )
      where entity_kind in ('NetworkService', 'Uri')`.execute(db);
    await db.schema
      .createIndex("findings_by_endpoint")
      .on("findings")
      .columns([
        "collection_id",
        "name",
        "endpoint",
        "severity",
        "entity_kind",
        "entity_name",
        "version_run_id",
        "last_run_id",
        "first_seen",
        "last_seen",
        "scoped",
      ])
      .where(sql<boolean>`endpoint is not null`)
      .execute();
  },
};
