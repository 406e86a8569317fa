/** Runs of a collection: force one (schedule), list them, read one, cancel one. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import { conflict, forbidden, notFound } from "../core/errors.ts";
import { formatTimestamp, formatTimestampOrNull } from "../core/formats.ts";
import type { RunCoordinator } from "../runs/coordinator.ts";
import type { RunRow } from "../runs/repository.ts";
import { mayRun } from "../runs/scan-rate.ts";
import { RUN_STATUSES } from "../store/schema.ts";
import { visibleCollection } from "./collections.ts";
import { COMMON_ERRORS, CollectionParams, Envelope, NOT_FOUND_ERROR, RecordId } from "./schemas.ts";

const Timestamp = (description: string) =>
  Type.Union([Type.String(), Type.Null()], {
    description: `${description} (YYYY-MM-DD HH:MM:SS UTC), or null`,
  });

export const Run = Type.Object({
  id: Type.Integer(),
  status: Type.String({
    enum: [...RUN_STATUSES],
    description:
      "queued → started → finished; or failed (see `error`) or cancelled. Only a finished run's results are served.",
  }),
  created_at: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
  priority: Type.Integer({
    description: "Lower runs first when workers are busy: forced runs 1, scheduled 5.",
  }),
  trigger: Type.String({
    enum: ["forced", "scheduled"],
    description: "Who started it: the API, or the scheduler.",
  }),
  started_at: Timestamp("When a worker began it"),
  finished_at: Timestamp("When it finished, failed or was cancelled"),
  error: Type.Union([Type.String(), Type.Null()], {
    description: "Why it failed or who cancelled it; null otherwise.",
  }),
  tasks_total: Type.Integer({ description: "Tasks known so far; grows as tasks find more work." }),
  tasks_done: Type.Integer({ description: "Tasks completed." }),
});

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

export function describeRun(row: RunRow) {
  const timestamp = formatTimestampOrNull;
  return {
    id: row.id,
    status: row.status,
    created_at: formatTimestamp(row.created_at),
    priority: row.priority,
    trigger: row.trigger,
    started_at: timestamp(row.started_at),
    finished_at: timestamp(row.finished_at),
    error: row.error,
    tasks_total: row.tasks_total,
    tasks_done: row.tasks_done,
  };
}

/** The run routes, given the coordinator that creates and cancels runs. */
export function runRoutes(coordinator: RunCoordinator) {
  return async (instance: FastifyInstance): Promise<void> => {
    const app = instance.withTypeProvider<TypeBoxTypeProvider>();
    const { collections, runs } = app.services;
    const tags = ["Runs"];

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
        return { success: true as const, message: "success" as const, result: rows.map(describeRun) };
      },
    );

    app.get(
      "/:collection_name/runs/:id",
      {
        schema: {
          tags,
          summary: "Read one run: status and progress",
          params: RunParams,
          response: { 200: Envelope(Run), ...COMMON_ERRORS, ...RUN_NOT_FOUND },
        },
      },
      async (request) => {
        const { collection_name, id } = request.params;
        const collection = await visibleCollection(collections, request.principal, collection_name);
        const row = await findRun(collection.id, collection.name, id);
        return { success: true as const, message: "success" as const, result: describeRun(row) };
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
        return { success: true as const, message: "success" as const, result: describeRun(now) };
      },
    );
  };
}
