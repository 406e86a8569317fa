/** Runs of a collection: force one (schedule), list them, read one, cancel one. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { conflict, forbidden, notFound } from "../core/errors.ts";
import { formatTimestamp } from "../core/formats.ts";
import { describeRun, describeRunDetail, isWaitingKind, Run, RunDetail, RunNotes } from "../results/runs.ts";
import type { RunCoordinator } from "../runs/coordinator.ts";
import { WORKER_SEEN_SECONDS } from "../runs/queue.ts";
import { mayRun } from "../runs/scan-rate.ts";
import type { RunRow } from "../store/runs.ts";
import { visibleCollection } from "./collections.ts";
import {
  COMMON_ERRORS,
  CollectionParams,
  Envelope,
  NOT_FOUND_ERROR,
  PageOffset,
  RecordId,
} from "./schemas.ts";

const RunParams = Type.Object({
  collection_name: Type.String(),
  id: RecordId("The run's id, as listed."),
});

const errorResponse = (description: string) => ({ ...Type.Ref("ErrorEnvelope"), description });

const SCHEDULE_FORBIDDEN = {
  403: errorResponse("The account is suspended or expired and cannot start runs."),
};
const RUN_NOT_FOUND = { 404: errorResponse("No such collection visible to you, or no such run in it.") };
const NOT_CANCELLABLE = {
  409: errorResponse("The run has already ended (finished, failed, cancelled) or is saving its results."),
};

/** The run routes, given the coordinator that creates and cancels runs. */
export function runRoutes(coordinator: RunCoordinator) {
  return async (instance: FastifyInstance): Promise<void> => {
    const app = instance.withTypeProvider<TypeBoxTypeProvider>();
    const { collections, runs } = app.services;
    const tags = ["Runs"];

    /**
     * In distributed mode a run moves only when a `sightline worker` takes its jobs: with none seen
     * lately, say so instead of showing "queued, 0/0 tasks" forever.
     */
    const waitingFor = async (rows: RunRow[]): Promise<string | null> => {
      if (!coordinator.queue.workersSeen || !rows.some(isWaitingKind)) return null;
      const seen = await coordinator.queue.workersSeen().catch(() => undefined);
      if (seen !== 0) return null;
      return `Waiting for a worker (none seen in the last ${WORKER_SEEN_SECONDS} s): start one with sightline worker, with the server's DATABASE_URL and REDIS_URL.`;
    };

    const findRun = async (collectionId: number, collectionName: string, id: number) => {
      const row = await runs.findInCollection(collectionId, id);
      if (!row)
        throw notFound(
          `Collection "${collectionName}" has no run ${id}; list its runs with GET /api/collections/${collectionName}/runs.`,
        );
      return row;
    };

    app.route({
      method: ["GET", "POST"],
      url: "/:collection_name/schedule",
      schema: {
        tags,
        summary: "Force a run now",
        description:
          "Queues a run with priority 1 and answers its id (a string). While a run of the collection is queued or started, answers that run's id instead of starting a second one. Automatic runs continue as scheduled. Takes no body.",
        params: CollectionParams,
        response: {
          200: Envelope(Type.Object({ id: Type.String({ description: "The run's id, as a string." }) })),
          ...COMMON_ERRORS,
          ...SCHEDULE_FORBIDDEN,
          ...NOT_FOUND_ERROR,
          409: errorResponse("The collection has no seeds: a run would find nothing."),
        },
      },
      handler: async (request) => {
        const { principal } = request;
        const collection = await visibleCollection(collections, principal, request.params.collection_name);
        if (!mayRun(principal.accountStatus)) {
          throw forbidden(
            `Your account is ${principal.accountStatus}, so it cannot start runs; ask your administrator to reactivate it.`,
          );
        }
        // A run of nothing would "finish" and replace the results with nothing.
        if (!(await collections.hasSeeds(collection.id)))
          throw conflict(
            `Collection "${collection.name}" has no seeds, so a run would find nothing and replace its results with nothing; add seeds first (POST /api/collections/${collection.name}).`,
          );
        const { run } = await coordinator.force(collection.id);
        return { success: true as const, message: "success" as const, result: { id: String(run.id) } };
      },
    });

    app.get(
      "/:collection_name/runs",
      {
        schema: {
          tags,
          summary: "List the runs of a collection, newest first",
          params: CollectionParams,
          response: { 200: Envelope(Type.Array(Run)), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
        },
      },
      async (request) => {
        const collection = await visibleCollection(
          collections,
          request.principal,
          request.params.collection_name,
        );
        const rows = await runs.listForCollection(collection.id);
        const waiting = await waitingFor(rows);
        return {
          success: true as const,
          message: "success" as const,
          result: rows.map((row) => describeRun(row, waiting)),
        };
      },
    );

    app.get(
      "/:collection_name/runs/:id",
      {
        schema: {
          tags,
          summary: "Read one run: status, progress and the discovery settings it uses",
          params: RunParams,
          response: { 200: Envelope(RunDetail), ...COMMON_ERRORS, ...RUN_NOT_FOUND },
        },
      },
      async (request) => {
        const { collection_name, id } = request.params;
        const collection = await visibleCollection(collections, request.principal, collection_name);
        const row = await findRun(collection.id, collection.name, id);
        const notes = await app.services.entities.noteCounts(row.id);
        const sources = await app.services.runSources.forRun(row.id);
        return {
          success: true as const,
          message: "success" as const,
          result: describeRunDetail(row, notes, await waitingFor([row]), sources),
        };
      },
    );

    app.get(
      "/:collection_name/runs/:id/notes",
      {
        schema: {
          tags,
          summary: "Read a run's notes: counted by kind with examples, and one page of them",
          description:
            "`kinds` counts every kind of note with its first few; `notes` is one page (`limit`, default 100, at most 1000; `offset`), optionally of one `kind`.",
          params: RunParams,
          querystring: Type.Object(
            {
              kind: Type.Optional(Type.String({ maxLength: 64, description: "Only notes of this kind." })),
              limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
              offset: Type.Optional(PageOffset()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Envelope(RunNotes), ...COMMON_ERRORS, ...RUN_NOT_FOUND },
        },
      },
      async (request) => {
        const { collection_name, id } = request.params;
        const { kind, limit = 100, offset = 0 } = request.query;
        const collection = await visibleCollection(collections, request.principal, collection_name);
        const row = await findRun(collection.id, collection.name, id);
        const { entities } = app.services;
        const kinds = await entities.noteKinds(row.id);
        const page = await entities.notePage(row.id, { kind, limit, offset });
        const total = kinds
          .filter((entry) => kind === undefined || entry.kind === kind)
          .reduce((sum, entry) => sum + entry.count, 0);
        return {
          success: true as const,
          message: "success" as const,
          result: {
            total,
            kinds,
            notes: page.map((note) => ({ ...note, created_at: formatTimestamp(note.created_at) })),
          },
        };
      },
    );

    app.post(
      "/:collection_name/runs/:id/cancel",
      {
        schema: {
          tags,
          summary: "Cancel a queued or started run",
          description:
            "Its tasks in flight are aborted and it never replaces the results. A run that has ended, or is already saving its results, cannot be cancelled (409). Takes no body.",
          params: RunParams,
          response: { 200: Envelope(Run), ...COMMON_ERRORS, ...RUN_NOT_FOUND, ...NOT_CANCELLABLE },
        },
      },
      async (request) => {
        const { collection_name, id } = request.params;
        const collection = await visibleCollection(collections, request.principal, collection_name);
        const row = await findRun(collection.id, collection.name, id);
        const outcome = await coordinator.cancel(row.id, `Cancelled by ${request.principal.userName}.`);
        const now = await findRun(collection.id, collection.name, id);
        if (outcome === "finishing")
          throw conflict(
            `Run ${id} has done its work and is saving its results; it can no longer be cancelled.`,
          );
        if (outcome === "ended")
          throw conflict(
            `Run ${id} is already ${now.status}; only a queued or started run can be cancelled.`,
          );
        return { success: true as const, message: "success" as const, result: describeRun(now, null) };
      },
    );
  };
}
