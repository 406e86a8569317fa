/**
 * What the OpenAPI document says of each operation beyond its route schema: a stable `operationId`
 * (client generators name methods after it), a description when the route has none, and what its
 * success answer holds. Keyed by `METHOD /path` as the document writes it. A route missing here still
 * gets an id made from its method and path, and a test names it (test/api/openapi.test.ts).
 */

export interface OperationText {
  operationId: string;
  /** Used when the route's schema has no description. */
  description?: string;
  /** The description of the success answer (instead of "Default Response"). */
  success: string;
  /** Descriptions of error answers the route schema leaves undescribed, by status. */
  errors?: Record<string, string>;
}

const COLLECTION = "/api/collections/{collection_name}";

const list = (operationId: string, what: string): OperationText => ({
  operationId,
  success: `The envelope around ${what}; with format=csv or ndjson, the same rows as a download.`,
});

export const OPERATIONS: Record<string, OperationText> = {
  "GET /healthz": {
    operationId: "getHealth",
    success: "The service and every dependency it needs answer.",
    errors: { 503: "A dependency does not answer; the body names which (why is in the server log)." },
  },
  "GET /metrics": {
    operationId: "getMetrics",
    success: "The metrics in the Prometheus text format (0.0.4).",
  },
  "GET /api/openapi.json": {
    operationId: "getOpenApiDocument",
    success: "This document.",
  },
  "GET /docs": {
    operationId: "getApiReference",
    success: "The API reference page (HTML, Swagger UI) over this document.",
  },
  "GET /api/collections": {
    operationId: "listCollections",
    description:
      "The names of the collections of every team you are a member of, in name order. A collection of another team of your account is not listed.",
    success: "The envelope around the collection names.",
  },
  "POST /api/collections": {
    operationId: "createCollection",
    success: "The collection as created, with its normalised seeds.",
  },
  [`GET ${COLLECTION}`]: {
    operationId: "getCollection",
    description: "The collection's team, scan rate, dates and seeds.",
    success: "The envelope around the collection.",
  },
  [`POST ${COLLECTION}`]: {
    operationId: "addSeeds",
    success: "How many seeds were added and how many the collection now has.",
  },
  [`DELETE ${COLLECTION}`]: {
    operationId: "deleteCollection",
    description:
      "Deletes the collection with its seeds, runs, results and webhooks; an active run is cancelled first.",
    success: "What went with it: how many runs and seeds.",
  },
  [`DELETE ${COLLECTION}/seeds/{type}/{value}`]: {
    operationId: "deleteSeed",
    description: "Deletes one seed of the collection, named by its type and value (percent-encoded).",
    success: "Whether the collection had the seed.",
  },
  [`DELETE ${COLLECTION}/seeds`]: {
    operationId: "deleteSeeds",
    success: "How many seeds were deleted; the collection now has none.",
  },
  [`GET ${COLLECTION}/hosts`]: list("listHosts", "the hosts, keyed by IP address"),
  [`GET ${COLLECTION}/services`]: list(
    "listServices",
    "the network services with what they were identified as",
  ),
  [`GET ${COLLECTION}/domains`]: list("listDomains", "the domains"),
  [`GET ${COLLECTION}/netblocks`]: list("listNetblocks", "the netblocks"),
  [`GET ${COLLECTION}/recent`]: list("listRecentEntities", "the entities first seen by the run"),
  [`GET ${COLLECTION}/applications`]: list("listApplications", "the applications"),
  [`GET ${COLLECTION}/issues`]: list("listIssues", "the issues"),
  [`GET ${COLLECTION}/products`]: list("listProducts", "the products"),
  [`GET ${COLLECTION}/vulnerabilities`]: list("listVulnerabilities", "the vulnerabilities"),
  [`GET ${COLLECTION}/connections`]: list("listConnections", "the third parties"),
  [`GET ${COLLECTION}/overview/history`]: {
    operationId: "getOverviewHistory",
    description: "The overview's counts for each finished run, oldest first: the trend the dashboard draws.",
    success: "The envelope around one point per finished run.",
  },
  [`GET ${COLLECTION}/overview`]: {
    operationId: "getOverview",
    success: "The envelope around the overview's figures.",
  },
  [`GET ${COLLECTION}/runs/{id}/diff`]: {
    operationId: "getRunDiff",
    success: "The entities and issues that appeared and disappeared.",
  },
  [`GET ${COLLECTION}/export/{item_type}/from_date/{from_date}`]: {
    operationId: "exportFirstPage",
    success: "The envelope around one page: its items, whether more follow, and where it ended.",
  },
  [`GET ${COLLECTION}/export/{item_type}/from_date/{from_date}/{page_token}`]: {
    operationId: "exportNextPage",
    success: "The envelope around the next page.",
  },
  [`POST ${COLLECTION}/webhooks`]: {
    operationId: "createWebhook",
    success: "The webhook as registered, with its signing secret (shown only in this answer).",
  },
  [`GET ${COLLECTION}/webhooks`]: {
    operationId: "listWebhooks",
    description:
      "Every webhook of the collection with its URL, events and threshold; secrets are never shown again.",
    success: "The envelope around the webhooks.",
  },
  [`DELETE ${COLLECTION}/webhooks/{id}`]: {
    operationId: "deleteWebhook",
    description: "Deliveries not yet sent are dropped with it.",
    success: "The webhook that was deleted.",
  },
  [`GET ${COLLECTION}/webhooks/{id}/deliveries`]: {
    operationId: "listWebhookDeliveries",
    description:
      "Each event sent or waiting to be sent to the webhook, newest first, with its status and every attempt (time, status code, error, duration).",
    success: "The envelope around the deliveries.",
  },
  [`POST ${COLLECTION}/schedule`]: {
    operationId: "forceRun",
    success: "The id of the run queued, or of the run already queued or started.",
  },
  [`GET ${COLLECTION}/schedule`]: {
    operationId: "forceRunByGet",
    success: "The id of the run queued, or of the run already queued or started.",
  },
  [`GET ${COLLECTION}/runs`]: {
    operationId: "listRuns",
    description: "Every run of the collection, newest first, with its status, trigger, times and progress.",
    success: "The envelope around the runs.",
  },
  [`GET ${COLLECTION}/runs/{id}`]: {
    operationId: "getRun",
    description: "The run's status, trigger, times, progress (tasks done of total) and, when it failed, why.",
    success: "The envelope around the run.",
  },
  [`GET ${COLLECTION}/runs/{id}/notes`]: {
    operationId: "listRunNotes",
    description:
      "The run's notes (a seed that did not resolve, a cap that cut a read), grouped by what wrote them, paged.",
    success: "The envelope around the notes.",
  },
  [`POST ${COLLECTION}/runs/{id}/cancel`]: {
    operationId: "cancelRun",
    success: "The run as cancelled.",
  },
  "GET /api/teams": {
    operationId: "listTeams",
    success: "The envelope around your teams.",
  },
  "GET /api/sources": {
    operationId: "listSources",
    description:
      "Every passive source this server can ask: whether runs ask it and why not, whether its key is set (never the key), its rate limit and documentation, and its status in the latest run of your collections that asked it.",
    success: "The envelope around the passive sources.",
  },
};

/** An operation's id when the table has none: its method and path in camel case. */
export function fallbackOperationId(method: string, path: string): string {
  const words = `${method} ${path}`
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return words.map((word, i) => (i === 0 ? word : word[0].toUpperCase() + word.slice(1))).join("");
}
