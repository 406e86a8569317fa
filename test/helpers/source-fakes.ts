/**
 * One loopback server that answers as every passive source does, each under its own path prefix
 * (`http://127.0.0.x:port/<id>/…`, the value of SIGHTLINE_SOURCE_<ID>_URL), in the response format of
 * the source's published API documentation, with its paging. Keyed sources check their key where their
 * documentation puts it (`KEY-<id>`; Censys `ID:SECRET` in basic authentication) and answer 401 without
 * it. `fault` makes every answer one of the failures a source can have: 429 with Retry-After (once),
 * 503, malformed JSON, a 50 MB answer, a slow drip, a redirect loop.
 *
 * The names for a domain `d`: first page `www.d`, `API.d` (upper case), `*.d`, and `cdn.partner.example`
 * (out of scope); second page `old.d`. Sources that answer labels give `www`, `api`, then `old`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SOURCE_IDS } from "../../src/core/sources.ts";

export type SourceFault = "none" | "429-once" | "503" | "malformed" | "huge" | "drip" | "redirect-loop";

export interface SourceFakes {
  /** Base URL of a source on this server. */
  url(id: string): string;
  /** Settings pointing every source here, with every keyed source's key. */
  settings(): Record<string, string>;
  fault: SourceFault;
  /** Requests seen, per source id. */
  requests: Map<string, number>;
  /** Names a source adds for a domain beyond the standard ones, by `<id> <domain>` (or `<domain>`: every source). */
  extra: Map<string, string[]>;
  /** Sources that answer 500 whatever `fault` says. */
  broken: Set<string>;
  close(): Promise<void>;
}

export const keyOf = (id: string) => (id === "censys" ? "ID:SECRET" : `KEY-${id}`);

const firstPage = (d: string) => [`www.${d}`, `API.${d}`, `*.${d}`, "cdn.partner.example"];
const secondPage = (d: string) => [`old.${d}`];

type Answer = { status?: number; json?: unknown; text?: string; type?: string };
type Handler = (request: {
  rest: string[];
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: string;
  extra: (d: string) => string[];
}) => Answer | undefined;

const json = (value: unknown): Answer => ({ json: value });
const all = (d: string, extra: (d: string) => string[]) => [...firstPage(d), ...secondPage(d), ...extra(d)];
const labels = (names: string[], d: string) =>
  names
    .filter((n) => n.toLowerCase().endsWith(`.${d}`) && !n.startsWith("*."))
    .map((n) => n.slice(0, -d.length - 1).toLowerCase());

/** Where each keyed source's documentation puts its key. */
const KEY_CHECKS: Record<string, (h: IncomingMessage["headers"], q: URLSearchParams) => string | undefined> =
  {
    securitytrails: (h) => h.apikey as string,
    virustotal: (h) => h["x-apikey"] as string,
    censys: (h) => Buffer.from(String(h.authorization ?? "").replace(/^Basic /, ""), "base64").toString(),
    shodan: (_h, q) => q.get("key") ?? undefined,
    chaos: (h) => h.authorization,
    github: (h) => String(h.authorization ?? "").replace(/^Bearer /, ""),
    otx: (h) => h["x-otx-api-key"] as string,
    binaryedge: (h) => h["x-key"] as string,
    fullhunt: (h) => h["x-api-key"] as string,
    netlas: (h) => h["x-api-key"] as string,
    leakix: (h) => h["api-key"] as string,
  };

const HANDLERS: Record<string, Handler> = {
  crtsh: ({ query, extra }) => {
    const d = String(query.get("q")).replace(/^%\./, "");
    if (query.get("output") !== "json") return undefined;
    return json(
      all(d, extra).map((name, i) => ({
        issuer_ca_id: 183267,
        issuer_name: "C=US, O=Let's Encrypt, CN=R3",
        common_name: name,
        name_value: `${name}\n${name}`,
        id: 9000 + i,
        entry_timestamp: "2024-03-01T10:00:00.123",
        not_before: "2024-03-01T09:00:00",
        not_after: "2024-05-30T09:00:00",
        serial_number: `0${i}`,
      })),
    );
  },
  certspotter: ({ rest, query, extra }) => {
    if (rest.join("/") !== "v1/issuances" || query.get("expand") !== "dns_names") return undefined;
    const d = String(query.get("domain"));
    const issuance = (id: string, names: string[]) => ({
      id,
      tbs_sha256: "aa",
      cert_sha256: "bb",
      dns_names: names,
      pubkey_sha256: "cc",
      not_before: "2024-03-01T09:00:00Z",
      not_after: "2024-05-30T09:00:00Z",
      revoked: false,
    });
    const after = query.get("after");
    if (!after) return json([issuance("100", firstPage(d))]);
    if (after === "100") return json([issuance("101", [...secondPage(d), ...extra(d)])]);
    return json([]);
  },
  hackertarget: ({ rest, query, extra }) => {
    if (rest[0] !== "hostsearch") return undefined;
    const d = String(query.get("q"));
    return {
      text: all(d, extra)
        .map((n) => `${n},192.0.2.1`)
        .join("\n"),
      type: "text/plain",
    };
  },
  anubis: ({ rest, extra }) =>
    rest[0] === "anubis" && rest[1] === "subdomains" ? json(all(rest[2]!, extra)) : undefined,
  wayback: ({ rest, query, extra }) => {
    if (rest.join("/") !== "cdx/search/cdx" || query.get("output") !== "json") return undefined;
    const d = String(query.get("url")).replace(/^\*\./, "");
    if (!query.get("resumeKey"))
      return json([["original"], ...firstPage(d).map((n) => [`http://${n}/index.html`]), [], ["RESUME-1"]]);
    return json([["original"], ...[...secondPage(d), ...extra(d)].map((n) => [`https://${n}:443/a?b=c`])]);
  },
  commoncrawl: ({ rest, query, extra }) => {
    if (rest[0] === "collinfo.json")
      return json([
        {
          id: "CC-MAIN-2024-10",
          name: "February/March 2024 Index",
          timegate: "x",
          "cdx-api": "https://index.commoncrawl.org/CC-MAIN-2024-10-index",
        },
        {
          id: "CC-MAIN-2023-50",
          name: "November/December 2023 Index",
          timegate: "x",
          "cdx-api": "https://index.commoncrawl.org/CC-MAIN-2023-50-index",
        },
      ]);
    if (rest[0] !== "CC-MAIN-2024-10-index") return undefined;
    const d = String(query.get("url")).replace(/^\*\./, "");
    if (query.get("showNumPages") === "true") return json({ pages: 2, pageSize: 5, blocks: 9 });
    const names = query.get("page") === "0" ? firstPage(d) : [...secondPage(d), ...extra(d)];
    return {
      text: names
        .map((n) => JSON.stringify({ urlkey: "x", timestamp: "20240301000000", url: `http://${n}/` }))
        .join("\n"),
      type: "text/x-ndjson",
    };
  },
  urlscan: ({ rest, query, extra }) => {
    if (rest.join("/") !== "api/v1/search") return undefined;
    const d = String(query.get("q")).replace(/^domain:/, "");
    const result = (name: string, i: number) => ({
      task: { domain: name, url: `https://${name}/`, visibility: "public", time: "2024-03-01T00:00:00Z" },
      page: { domain: name, url: `https://${name}/`, ip: "192.0.2.1" },
      _id: `uuid-${i}`,
      sort: [1709251200000 - i, `uuid-${i}`],
    });
    if (!query.get("search_after"))
      return json({ results: firstPage(d).map(result), total: 5, took: 3, has_more: true });
    return json({
      results: [...secondPage(d), ...extra(d)].map((n, i) => result(n, 10 + i)),
      total: 5,
      took: 3,
      has_more: false,
    });
  },
  rapiddns: ({ rest, query, extra }) => {
    if (rest[0] !== "subdomain") return undefined;
    const d = rest[1]!;
    const page = query.get("page");
    const names = page === "1" ? firstPage(d) : page === "2" ? [...secondPage(d), ...extra(d)] : [];
    const rows = names
      .map(
        (n, i) =>
          `<tr>\n<th scope="row">${i + 1}</th>\n<td>${n}</td>\n<td><a href="/sameip/192.0.2.1">192.0.2.1</a></td>\n<td>A</td>\n<td>2024-03-01</td>\n</tr>`,
      )
      .join("\n");
    return {
      text: `<html><body><table class="table" id="table"><thead><tr><th>#</th><th>Domain</th><th>Address</th><th>Type</th><th>Date</th></tr></thead><tbody>${rows}</tbody></table></body></html>`,
      type: "text/html",
    };
  },
  threatminer: ({ rest, query, extra }) => {
    if (rest[0] !== "v2" || query.get("rt") !== "5") return undefined;
    return json({
      status_code: "200",
      status_message: "Results found.",
      results: all(String(query.get("q")), extra),
    });
  },
  thc: ({ rest, body, extra }) => {
    if (rest.join("/") !== "api/v1/lookup/subdomains") return undefined;
    const asked = JSON.parse(body) as { domain: string; page_state?: string };
    const d = asked.domain;
    if (!asked.page_state)
      return json({ domains: firstPage(d).map((domain) => ({ domain })), page_state: "STATE-2" });
    return json({ domains: [...secondPage(d), ...extra(d)].map((domain) => ({ domain })), page_state: "" });
  },
  subdomaincenter: ({ query, extra }) => json(all(String(query.get("domain")), extra)),
  shodanidb: ({ rest }) => {
    const ip = rest[0]!;
    if (ip === "192.0.2.99") return { status: 404, json: { detail: "No information available" } };
    return json({
      ip,
      ports: [80, 443],
      cpes: ["cpe:/a:nginx:nginx:1.18.0"],
      hostnames: ["www.lab.test", "mail.partner.example"],
      tags: ["cloud"],
      vulns: [],
    });
  },
  securitytrails: ({ rest, extra }) => {
    const d = rest[2]!;
    return json({
      endpoint: `/v1/domain/${d}/subdomains`,
      meta: { limit_reached: false },
      subdomain_count: 3,
      subdomains: labels(all(d, extra), d),
    });
  },
  virustotal: ({ rest, query, extra }) => {
    const d = rest[3]!;
    const item = (id: string) => ({
      id,
      type: "domain",
      links: { self: `https://www.virustotal.com/api/v3/domains/${id}` },
      attributes: {},
    });
    if (!query.get("cursor"))
      return json({
        data: firstPage(d).map(item),
        meta: { count: 5, cursor: "CURSOR-2" },
        links: { self: "x", next: "y" },
      });
    return json({
      data: [...secondPage(d), ...extra(d)].map(item),
      meta: { count: 5 },
      links: { self: "x" },
    });
  },
  censys: ({ body, extra }) => {
    const asked = JSON.parse(body) as { q: string; cursor?: string };
    const d = asked.q.replace(/^names: /, "");
    const page = (names: string[], next: string) => ({
      code: 200,
      status: "OK",
      result: {
        query: asked.q,
        total: 2,
        duration_ms: 10,
        hits: [{ names, fingerprint_sha256: "aa", parsed: {} }],
        links: { prev: "", next },
      },
    });
    return json(asked.cursor ? page([...secondPage(d), ...extra(d)], "") : page(firstPage(d), "NEXT-2"));
  },
  shodan: ({ rest, query, extra }) => {
    const d = rest[2]!;
    const page = query.get("page");
    const names = page === "1" ? firstPage(d) : [...secondPage(d), ...extra(d)];
    return json({
      domain: d,
      tags: [],
      data: labels(names, d).map((subdomain) => ({
        subdomain,
        type: "A",
        value: "192.0.2.1",
        last_seen: "2024-03-01T00:00:00.000000",
      })),
      subdomains: labels(names, d),
      more: page === "1",
    });
  },
  chaos: ({ rest, extra }) => {
    const d = rest[1]!;
    return json({ domain: d, subdomains: labels(all(d, extra), d), count: 3 });
  },
  github: ({ query, extra }) => {
    const d = String(query.get("q")).replace(/"/g, "");
    const page = query.get("page");
    const item = (fragment: string) => ({
      name: "config.yml",
      path: "deploy/config.yml",
      html_url: "https://github.com/x/y",
      text_matches: [{ object_type: "FileContent", property: "content", fragment }],
    });
    if (page === "1")
      return json({
        total_count: 101,
        incomplete_results: false,
        items: Array.from({ length: 100 }, (_, i) =>
          item(`host: ${firstPage(d)[i % 4]}\nurl: https://${firstPage(d)[(i + 1) % 4]}/path`),
        ),
      });
    return json({
      total_count: 101,
      incomplete_results: false,
      items: [item(`backend = "${[...secondPage(d), ...extra(d)].join(",")}"`)],
    });
  },
  otx: ({ rest, extra }) => {
    const d = rest[4]!;
    return json({
      passive_dns: all(d, extra).map((hostname) => ({
        address: "192.0.2.1",
        first: "2024-01-01T00:00:00",
        last: "2024-03-01T00:00:00",
        hostname,
        record_type: "A",
        indicator_link: "/indicator/hostname/x",
        flag_url: "",
        flag_title: "",
        asset_type: "hostname",
        asn: "AS64496",
      })),
      count: 5,
    });
  },
  binaryedge: ({ rest, query, extra }) => {
    const d = rest[4]!;
    const page = Number(query.get("page"));
    const names = page === 1 ? firstPage(d) : [...secondPage(d), ...extra(d)];
    return json({ query: d, page, pagesize: 4, total: 5, events: names });
  },
  fullhunt: ({ rest, extra }) => {
    const d = rest[3]!;
    return json({
      domain: d,
      hosts: all(d, extra),
      message: "",
      metadata: { all_results_count: 5 },
      status: 200,
    });
  },
  netlas: ({ query, extra }) => {
    const d = String(query.get("q")).replace(/^domain:\*\./, "");
    const start = Number(query.get("start"));
    const item = (domain: string) => ({ data: { domain, level: 3, last_updated: "2024-03-01T00:00:00" } });
    if (start === 0) return json({ items: Array.from({ length: 20 }, (_, i) => item(firstPage(d)[i % 4]!)) });
    return json({ items: [...secondPage(d), ...extra(d)].map(item) });
  },
  leakix: ({ rest, extra }) => {
    const d = rest[2]!;
    return json(
      all(d, extra).map((subdomain) => ({ subdomain, distinct_ips: 1, last_seen: "2024-03-01T00:00:00Z" })),
    );
  },
};

export async function startSourceFakes(host = "127.0.0.61"): Promise<SourceFakes> {
  let currentFault: SourceFault = "none";
  const state = {
    requests: new Map<string, number>(),
    extra: new Map<string, string[]>(),
    broken: new Set<string>(),
  };
  const faultsServed = new Set<string>();
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => answer(request, response, body));
  });
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  function answer(request: IncomingMessage, response: ServerResponse, body: string) {
    const url = new URL(request.url ?? "/", "http://fake");
    const [id, ...rest] = url.pathname
      .split("/")
      .filter((part) => part !== "")
      .map(decodeURIComponent);
    state.requests.set(id ?? "", (state.requests.get(id ?? "") ?? 0) + 1);
    if (state.broken.has(id ?? "")) return send(response, { status: 500, text: "internal error" });
    const fault = currentFault;
    if (fault === "429-once" && !faultsServed.has(`${id}`)) {
      faultsServed.add(`${id}`);
      response.writeHead(429, { "retry-after": "1", "content-type": "application/json" });
      return response.end('{"error":"rate limited"}');
    }
    if (fault === "503") return send(response, { status: 503, text: "unavailable" });
    if (fault === "redirect-loop") {
      response.writeHead(302, { location: `${url.pathname}${url.search}` });
      return response.end();
    }
    if (fault === "huge") {
      response.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const more = () => {
        while (sent < 50 && !response.destroyed) {
          sent++;
          if (!response.write(chunk)) return void response.once("drain", more);
        }
        response.end();
      };
      response.write("[");
      return more();
    }
    if (fault === "drip") {
      response.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => (response.destroyed ? clearInterval(timer) : response.write(" ")), 100);
      response.on("close", () => clearInterval(timer));
      return;
    }
    if (fault === "malformed")
      return send(response, { text: '[{"name_value": "www.lab.test"', type: "application/json" });
    const check = KEY_CHECKS[id ?? ""];
    if (check && check(request.headers, url.searchParams) !== keyOf(id!))
      return send(response, { status: 401, json: { error: "invalid API key" } });
    const handler = HANDLERS[id ?? ""];
    const extra = (d: string) => state.extra.get(`${id} ${d}`) ?? state.extra.get(d) ?? [];
    const result = handler?.({ rest, query: url.searchParams, headers: request.headers, body, extra });
    send(response, result ?? { status: 404, json: { error: "not found" } });
  }

  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://${host}:${port}`;
  return {
    ...state,
    get fault() {
      return currentFault;
    },
    set fault(value: SourceFault) {
      currentFault = value;
      faultsServed.clear();
    },
    url: (id: string) => `${base}/${id}`,
    settings() {
      const settings: Record<string, string> = {};
      for (const id of SOURCE_IDS) {
        settings[`SIGHTLINE_SOURCE_${id.toUpperCase()}_URL`] = `${base}/${id}`;
        if (KEY_CHECKS[id]) settings[`SIGHTLINE_SOURCE_${id.toUpperCase()}_KEY`] = keyOf(id);
      }
      return settings;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function send(response: ServerResponse, answer: Answer) {
  const text = answer.json !== undefined ? JSON.stringify(answer.json) : (answer.text ?? "");
  response.writeHead(answer.status ?? 200, { "content-type": answer.type ?? "application/json" });
  response.end(text);
}
