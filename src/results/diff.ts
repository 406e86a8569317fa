/**
 * What changed between a finished run and the finished run before it: the entities and issues that
 * appeared (seen by this run, not by the previous one) and disappeared (seen by the previous run, not by
 * this one), each as the run that saw it saw it. Streamed: a first run's diff is everything it found.
 */
import { type TObject, Type } from "typebox";
import { OrNull } from "../core/or-null.ts";
import type { ResultQueries, ResultRun } from "../store/result-queries.ts";
import { entityFields } from "./common.ts";
import { issueItems } from "./issues.ts";
import { chunked, ENVELOPE_START, jsonElements } from "./stream.ts";

export const diffSchema = (entity: TObject, issue: TObject) =>
  Type.Object({
    run_id: Type.Integer({ description: "The run compared." }),
    previous_run_id: OrNull(Type.Integer(), {
      description: "The finished run before it; null for the first finished run (everything appeared).",
    }),
    entities: Type.Object({
      appeared: Type.Array(entity, { description: "Seen by this run and not by the previous one." }),
      disappeared: Type.Array(entity, {
        description: "Seen by the previous run and not by this one (as the previous run saw them).",
      }),
    }),
    issues: Type.Object({
      appeared: Type.Array(issue),
      disappeared: Type.Array(issue),
    }),
  });

async function* mapped<T, U>(items: AsyncIterable<T>, map: (item: T) => U): AsyncGenerator<U> {
  for await (const item of items) yield map(item);
}

/** The diff's envelope, in chunks. */
export function diffBody(
  queries: ResultQueries,
  run: ResultRun,
  previous: ResultRun | undefined,
  schemas: { entity: TObject; issue: TObject },
): AsyncGenerator<string> {
  const entities = (seenBy: ResultRun | undefined, notBy: ResultRun | undefined) =>
    seenBy ? mapped(queries.entities(seenBy, { notSeenIn: notBy?.runId }), entityFields) : none();
  const issues = (seenBy: ResultRun | undefined, notBy: ResultRun | undefined) =>
    seenBy ? issueItems(queries, seenBy, queries.findings(seenBy, { notSeenIn: notBy?.runId })) : none();
  return chunked(
    (async function* () {
      yield `${ENVELOPE_START}{"run_id":${run.runId},"previous_run_id":${previous?.runId ?? null},"entities":{"appeared":[`;
      yield* jsonElements(entities(run, previous), schemas.entity);
      yield '],"disappeared":[';
      yield* jsonElements(entities(previous, run), schemas.entity);
      yield ']},"issues":{"appeared":[';
      yield* jsonElements(issues(run, previous), schemas.issue);
      yield '],"disappeared":[';
      yield* jsonElements(issues(previous, run), schemas.issue);
      yield "]}}}";
    })(),
  );
}

async function* none(): AsyncGenerator<never> {}
