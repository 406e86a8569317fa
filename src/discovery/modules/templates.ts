/**
 * Templates in the nuclei format (src/discovery/templates/) run as a discovery module: `http`
 * templates once per web application and run (the Uri entities web probing emits), `tcp`/`network`
 * templates on the TCP services whose port they name, `ssl` templates on each certificate's endpoints,
 * `dns` templates on domains. A match is an issue: `template:<id>` (a built-in template may keep an older
 * check's name through `info.metadata.sightline-issue`), nuclei's severity as 1–5, and details that say
 * what produced it (template id, file and its SHA-256) and what it saw (request, matched part,
 * extracted values). On an application that answers any path alike (http/catch-all.ts), a match on
 * such an answer to another path than the application's own is not raised.
 */
import { isIP } from "node:net";
import type { EntityRef, FoundEntity, FoundIssue } from "../../core/entities.ts";
import { parseServiceName } from "../../core/service-names.ts";
import { catchAllOf } from "../http/catch-all.ts";
import type { DiscoveryContext, DiscoveryModule } from "../module.ts";
import { deadline } from "../net/deadline.ts";
import { DnsClient } from "../net/dns-client.ts";
import { fetchLimits, HttpClient, type HttpExchange } from "../net/http-fetch.ts";
import { runHttpTemplate, type TemplateHit } from "../templates/http.ts";
import {
  DEFAULT_TEMPLATE_SETTINGS,
  excluded,
  type LoadedTemplate,
  loadLibrary,
  type TemplateLibrary,
  type TemplateSettings,
} from "../templates/library.ts";
import { runDnsTemplate, runNetworkTemplate, runSslTemplate, wantsPort } from "../templates/protocols.ts";
import { NUCLEI_SEVERITIES, type Template } from "../templates/template.ts";

/** Templates of one application in flight at once (the throttle bounds requests per host on top). */
const PARALLEL_TEMPLATES = 8;
/** Hits of one template on one entity kept in an issue's details. */
const MAX_HITS = 10;

/** critical 1 … info 5. */
export const severityOf = (template: Template) =>
  (NUCLEI_SEVERITIES.indexOf(template.info.severity) + 1) as FoundIssue["severity"];

const CATEGORIES: Array<[string, string]> = [
  ["cve", "vulnerability"],
  ["exposure", "information_disclosure"],
  ["exposed", "information_disclosure"],
  ["disclosure", "information_disclosure"],
  ["misconfig", "misconfiguration"],
  ["panel", "exposed_interface"],
  ["default-login", "default_credentials"],
  ["takeover", "takeover"],
];

export function issueOfTemplate(loaded: LoadedTemplate, entity: EntityRef, hits: TemplateHit[]): FoundIssue {
  const { template } = loaded;
  const { info } = template;
  const mapped = loaded.builtIn ? info.metadata["sightline-issue"] : undefined;
  const category =
    (loaded.builtIn && typeof info.metadata["sightline-category"] === "string"
      ? (info.metadata["sightline-category"] as string)
      : undefined) ??
    CATEGORIES.find(([tag]) => info.tags.includes(tag))?.[1] ??
    "template";
  const [first] = hits;
  const extracted: Record<string, string[]> = {};
  for (const hit of hits)
    for (const [key, values] of Object.entries(hit.extracted))
      extracted[key] = [...new Set([...(extracted[key] ?? []), ...values])];
  // A converted check keeps its proof's fields: `sightline-fields` names extractors whose values go
  // into the details as they are, `name` the first value, `name[]` the list.
  const fields: Record<string, string | string[]> = {};
  const named = loaded.builtIn ? info.metadata["sightline-fields"] : undefined;
  if (typeof named === "string")
    for (const field of named.split(",").map((name) => name.trim())) {
      const list = field.endsWith("[]");
      const values = extracted[list ? field.slice(0, -2) : field];
      if (values) fields[list ? field.slice(0, -2) : field] = list ? values : values[0];
    }
  return {
    name: typeof mapped === "string" ? mapped : `template:${template.id}`,
    prettyName: info.name || template.id,
    severity: severityOf(template),
    confidence: "confirmed",
    category,
    description: info.description || info.name || template.id,
    remediation: info.remediation,
    references: [
      ...info.references.map((uri) => ({ type: "description", uri })),
      ...info.cveIds.map((cve) => ({ type: "description", uri: `https://nvd.nist.gov/vuln/detail/${cve}` })),
    ],
    entity,
    details: {
      request: first.request,
      ...(first.status ? { status: first.status } : {}),
      uri: first.uri,
      ...(first.matched ? { matched: first.matched } : {}),
      ...(first.matcherNames.length > 0 ? { matcher_names: first.matcherNames } : {}),
      ...(Object.keys(extracted).length > 0 ? { extracted } : {}),
      ...(hits.length > 1 ? { matched_at: hits.slice(0, MAX_HITS).map((hit) => hit.uri) } : {}),
      ...fields,
      template_id: template.id,
      template_path: loaded.path,
      template_sha256: template.sha256,
      template_source: loaded.builtIn ? "sightline" : "SIGHTLINE_TEMPLATES",
      tags: info.tags,
      ...(info.cveIds.length > 0 ? { cve_ids: info.cveIds } : {}),
      ...(info.cweIds.length > 0 ? { cwe_ids: info.cweIds } : {}),
    },
  };
}

/** Runs `work` on every item, at most `width` at a time. */
async function pool<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

const isWebApplication = (entity: FoundEntity) =>
  entity.kind === "Uri" && entity.details?.response_data_hash !== undefined;

export function createTemplatesModule(
  options: { settings?: Partial<TemplateSettings> } = {},
): DiscoveryModule {
  let library: TemplateLibrary | undefined;
  let loading: Promise<TemplateLibrary> | undefined;
  let noteSkipped = true;
  const settingsOf = (ctx: DiscoveryContext): TemplateSettings => ({
    ...DEFAULT_TEMPLATE_SETTINGS,
    ...ctx.settings.templates,
    ...options.settings,
  });
  const load = async (ctx: DiscoveryContext) => {
    loading ??= loadLibrary(settingsOf(ctx));
    library = await loading;
    return library;
  };

  /** The templates of a protocol this run selects; the first task of a run notes what was skipped. */
  async function selected(ctx: DiscoveryContext, protocol: "http" | "network" | "dns" | "ssl") {
    const loaded = await load(ctx);
    const settings = settingsOf(ctx);
    if (noteSkipped) {
      noteSkipped = false;
      if (loaded.skipped.length > 0) {
        const shown = loaded.skipped.slice(0, 5).map((file) => `${file.path} ${file.reason}`);
        ctx.note(
          `${loaded.skipped.length} template file(s) were skipped, once, as outside the supported subset: ${shown.join("; ")}${loaded.skipped.length > 5 ? "; …" : ""} (sightline templates validate <dir> lists every one).`,
        );
      }
    }
    return loaded.templates.filter(
      (entry) => entry.template[protocol].length > 0 && excluded(entry.template, settings) === undefined,
    );
  }

  /** Runs `work` under a time bound of one time-out per request, and one more. */
  async function timeBound<T>(
    ctx: DiscoveryContext,
    requests: number,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const bound = deadline(ctx.signal, Math.max(1000, ctx.settings.timeoutMs * (requests + 1)));
    try {
      return await work(bound.signal);
    } finally {
      bound.done();
    }
  }

  async function runOnApplication(entity: FoundEntity, ctx: DiscoveryContext) {
    const templates = await selected(ctx, "http");
    if (templates.length === 0) return;
    const details = entity.details ?? {};
    const url = new URL(entity.name);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const address =
      typeof details.ip_address === "string" ? details.ip_address : isIP(host) ? host : undefined;
    if (!address || !ctx.mayTouch(address) || (!isIP(host) && !ctx.mayTouch(host))) return;
    const client = new HttpClient({
      pins: isIP(host) ? {} : { [host]: address },
      limits: fetchLimits(ctx.settings),
      signal: ctx.signal,
      mayTouch: ctx.mayTouch,
    });
    const cache = new Map<string, Promise<HttpExchange>>();
    const ref: EntityRef = { kind: "Uri", name: entity.name };
    const baseline = catchAllOf(details);
    const catchAll = baseline ? { baseline, skipped: 0 } : undefined;
    try {
      await pool(templates, PARALLEL_TEMPLATES, async (loaded) => {
        if (ctx.signal.aborted) return;
        const { template } = loaded;
        const requests = template.http.reduce((sum, block) => sum + block.requests.length, 0);
        const hits = await runHttpTemplate(template, entity.name, {
          client,
          cache,
          throttle: (work) => ctx.throttle.run(address, work, ctx.signal),
          signal: ctx.signal,
          deadline: Date.now() + Math.max(1000, ctx.settings.timeoutMs * (requests + 1)),
          maxRedirects: ctx.settings.limits.httpMaxRedirects,
          note: (message) => ctx.note(`template ${template.id} on ${entity.name}: ${message}`),
          ...(catchAll ? { catchAll } : {}),
        }).catch(() => []);
        if (hits.length > 0) ctx.raise(issueOfTemplate(loaded, ref, hits));
      });
      if (catchAll && catchAll.skipped > 0)
        ctx.note(
          `${entity.name} answers any path alike (HTTP ${baseline?.status} for a path that does not exist): ${catchAll.skipped} template match(es) on such answers were not raised.`,
        );
    } finally {
      await client.close();
    }
  }

  async function runOnService(entity: FoundEntity, ctx: DiscoveryContext) {
    const details = entity.details ?? {};
    const parsed = parseServiceName(entity.name);
    const address = String(details.ip_address ?? parsed?.address ?? "");
    const port = Number(details.port ?? parsed?.port);
    if (!isIP(address) || !Number.isInteger(port)) return;
    const templates = (await selected(ctx, "network")).filter((loaded) =>
      loaded.template.network.some((block) => wantsPort(block, port)),
    );
    const ref: EntityRef = { kind: "NetworkService", name: entity.name };
    const hostname = typeof details.hostname === "string" ? details.hostname : undefined;
    await pool(templates, PARALLEL_TEMPLATES, async (loaded) => {
      const hits = await timeBound(ctx, loaded.template.network.length, (signal) =>
        runNetworkTemplate(
          loaded.template,
          { address, port, hostname },
          {
            throttle: (work) => ctx.throttle.run(address, work, ctx.signal),
            signal,
            timeoutMs: ctx.settings.timeoutMs,
            mayTouch: ctx.mayTouch,
          },
        ),
      ).catch(() => []);
      if (hits.length > 0) ctx.raise(issueOfTemplate(loaded, ref, hits));
    });
  }

  async function runOnCertificate(entity: FoundEntity, ctx: DiscoveryContext) {
    const templates = await selected(ctx, "ssl");
    const endpoints = Array.isArray(entity.details?.endpoints) ? (entity.details.endpoints as unknown[]) : [];
    for (const endpoint of endpoints.slice(0, 4)) {
      const parsed = typeof endpoint === "string" ? parseServiceName(endpoint) : undefined;
      if (!parsed) continue;
      const ref: EntityRef = { kind: "NetworkService", name: endpoint as string };
      await pool(templates, PARALLEL_TEMPLATES, async (loaded) => {
        const hits = await timeBound(ctx, 1, (signal) =>
          runSslTemplate(loaded.template, parsed, {
            throttle: (work) => ctx.throttle.run(parsed.address, work, ctx.signal),
            signal,
            timeoutMs: ctx.settings.timeoutMs,
            mayTouch: ctx.mayTouch,
          }),
        ).catch(() => []);
        if (hits.length > 0) ctx.raise(issueOfTemplate(loaded, ref, hits));
      });
    }
  }

  async function runOnName(entity: FoundEntity, ctx: DiscoveryContext) {
    const templates = await selected(ctx, "dns");
    if (templates.length === 0 || !ctx.mayTouch(entity.name)) return;
    const client = new DnsClient(ctx);
    const ref: EntityRef = { kind: entity.kind, name: entity.name };
    await pool(templates, PARALLEL_TEMPLATES, async (loaded) => {
      const hits = await runDnsTemplate(loaded.template, entity.name, client).catch(() => []);
      if (hits.length > 0) ctx.raise(issueOfTemplate(loaded, ref, hits));
    });
  }

  const has = (protocol: "http" | "network" | "dns" | "ssl") =>
    library === undefined || library.templates.some((entry) => entry.template[protocol].length > 0);

  return {
    name: "templates",
    // DNS templates run on the collection's domains, not on every name found below them.
    consumes: ["Uri", "NetworkService", "SslCertificate", "Domain"],
    produces: [],
    wants(entity) {
      switch (entity.kind) {
        case "Uri":
          return isWebApplication(entity) && has("http");
        case "NetworkService":
          return (
            has("network") &&
            (library === undefined ||
              library.templates.some((entry) =>
                entry.template.network.some((block) =>
                  wantsPort(block, Number(entity.details?.port ?? parseServiceName(entity.name)?.port)),
                ),
              ))
          );
        case "SslCertificate":
          return has("ssl");
        default:
          return has("dns");
      }
    },
    runStarting(settings) {
      noteSkipped = true;
      // The library is loaded here too, not only by the first task: the engine asks `wants` in its own
      // thread, whose modules never run when a discovery thread does, and without the library every
      // service looked wanted (a no-op task per service no network template names: 8% of a /16's tasks).
      void load({ settings } as DiscoveryContext).catch(() => {});
    },
    async run(entity, ctx) {
      if (entity.kind === "Uri") return runOnApplication(entity, ctx);
      if (entity.kind === "NetworkService") return runOnService(entity, ctx);
      if (entity.kind === "SslCertificate") return runOnCertificate(entity, ctx);
      return runOnName(entity, ctx);
    },
  };
}
