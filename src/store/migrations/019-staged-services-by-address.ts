import { sql } from "kysely";
import type { DialectMigration } from "./helpers.ts";

/**
 * PostgreSQL: a run's staged services by their name's bytes, so the look-up of an address's services
 * ("1.2.3.4:" up to "1.2.3.4;") is a range of an index. The (run_id, kind, name) index follows the
 * database's collation, in which PostgreSQL can turn a LIKE prefix into a range only for "C" (not even
 * C.UTF-8), so each look-up read every service the run had staged: O(services) per name newly resolved,
 * quadratic in a domain-seeded run. Only services' rows pay for it. SQLite compares bytes already and
 * takes the range on its own index.
 */
export const stagedServicesByAddress: DialectMigration = {
  async up(db, dialect) {
    if (dialect !== "postgres") return;
    await sql`create index if not exists staged_entities_services on staged_entities (run_id, (name collate "C"))
      where kind = 'NetworkService'`.execute(db);
  },
};
