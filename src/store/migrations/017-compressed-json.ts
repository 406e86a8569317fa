import { sql } from "kysely";
import type { DialectMigration } from "./helpers.ts";

/**
 * The JSON columns of the results are stored compressed (src/store/json-codec.ts): entities' `details`,
 * `ancestors` and `task_results`, findings' `details` — together two thirds of what a run keeps per host.
 * A value is bytes now: raw deflate with a preset dictionary behind a version byte, or plain JSON as UTF-8
 * where compressing would not pay. The codec reads the plain JSON text of earlier rows as well, so no row
 * is rewritten here.
 *
 * SQLite: nothing to do. A column's TEXT affinity leaves a BLOB as it is, and node:sqlite answers it as a
 * Uint8Array (a row written before answers its text, as it always did).
 *
 * PostgreSQL: the columns become `bytea`, the existing JSON text its UTF-8 bytes (which the codec reads as
 * plain JSON). This rewrites both tables and their indexes under an exclusive lock: one ALTER TABLE per
 * table, so each is rewritten once (docs/operations.md says how long it takes).
 */
const COLUMNS = {
  entities: ["details", "ancestors", "task_results"],
  findings: ["details"],
} as const;

export const compressedJson: DialectMigration = {
  async up(db, dialect) {
    if (dialect !== "postgres") return;
    for (const [table, columns] of Object.entries(COLUMNS)) {
      const changes = columns.map(
        (column) =>
          sql`alter column ${sql.ref(column)} type bytea using convert_to(${sql.ref(column)}, 'UTF8')`,
      );
      await sql`alter table ${sql.table(table)} ${sql.join(changes)}`.execute(db);
    }
  },
};
