import { sql } from "kysely";
import type { DialectMigration } from "./helpers.ts";

/**
 * PostgreSQL: a run's working tables (`run_tasks`, `staged_entities`, `staged_findings`) are UNLOGGED, and
 * none of them holds a foreign key. Every task of a run writes them, and every row went through the
 * write-ahead log (a NetBlock /20 wrote 100 MB of it). Each staged row's key to `collections` and each task
 * row's key to `runs` also locked that one parent row: a logged write in every task's transaction, and a
 * multixact when tasks ran at once. Nothing in these tables is kept after the run, and nothing in them is
 * worth recovering: a run that loses them is run again.
 *
 * The price: a crash of the server (not a clean stop) empties unlogged tables, and replicas do not have
 * them. `run_working_marks` is unlogged too, with a row per started run: it is emptied with the rest.
 * A started run without its row has lost its tasks and staging, and is failed with that reason instead of
 * finishing on what is left (RunsRepository.lostWorkingTables, and the merge checks its run's row in its
 * own transaction). Their id sequences stay logged (PostgreSQL 15 makes them unlogged along with their
 * table), so ids are never handed out twice, even after a crash.
 *
 * The foreign keys' cascades are done by hand: a collection's deletion deletes its runs' tasks and staging
 * first (CollectionsRepository.delete). SQLite keeps its tables and keys as they were (one writer; no
 * parent row is locked). It has `run_working_marks` too, so both dialects take the same path.
 */
export const unloggedWorkingTables: DialectMigration = {
  async up(db, dialect) {
    if (dialect === "postgres") {
      await sql`create unlogged table if not exists run_working_marks (run_id integer primary key)`.execute(
        db,
      );
      const { rows } = await sql<{ server_version_num: string }>`show server_version_num`.execute(db);
      const sequencesFollow = Number(rows[0].server_version_num) >= 150000;
      for (const [table, key] of [
        ["staged_entities", "staged_entities_collection_id_fkey"],
        ["staged_findings", "staged_findings_collection_id_fkey"],
        ["run_tasks", "run_tasks_run_id_fkey"],
      ]) {
        await sql`alter table ${sql.table(table)} drop constraint if exists ${sql.ref(key)}`.execute(db);
        await sql`alter table ${sql.table(table)} set unlogged`.execute(db);
        if (sequencesFollow) await sql`alter sequence ${sql.table(`${table}_id_seq`)} set logged`.execute(db);
      }
    } else {
      await db.schema
        .createTable("run_working_marks")
        .ifNotExists()
        .addColumn("run_id", "integer", (c) => c.primaryKey())
        .execute();
    }
    // Runs started before this migration still have their tables.
    await sql`insert into run_working_marks (run_id) select id from runs
      where status = 'started' and id not in (select run_id from run_working_marks)`.execute(db);
  },
};
