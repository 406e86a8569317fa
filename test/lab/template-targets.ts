/**
 * The lab targets of Sightline's template library: for every shipped template a target that must
 * make it match and a twin that must not, as data (template-targets.json, beside this file), served
 * by generic servers rather than one handler per template:
 * - http/https: one server per scheme; the Host header `<template-id>--<match|twin>.targets.test`
 *   picks the site, whose resources are status, headers and body (text, or hex for binary files).
 *   A site without its own header list sends a hardened set (CSP, X-Frame-Options, nosniff), so the
 *   security-header templates stay quiet on it. `reflectOrigin` answers CORS for any Origin but null with
 *   credentials (`reflectNull`: for null only), `echoTrace` echoes TRACE requests, `fallback` answers unknown paths;
 * - tcp: a server on the template's port on its own address, answering a fixed reply to each command;
 * - dns: TXT records in zone `targets.test` of a lab name server;
 * - ssl: a TLS server presenting a lab-CA certificate with the given names.
 * Addresses are in 127.117.0.0/16.
 */
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { createCertificateAuthority } from "./certificates.ts";
import { createDnsServer } from "./dns-server.ts";
import { type Closable, listenTcp, withRandomPort } from "./sockets.ts";
import { ZoneSet } from "./zones.ts";

interface Resource {
  status?: number;
  body?: string;
  bodyHex?: string;
  headers?: Record<string, string>;
  method?: string;
}

export type TargetSpec =
  | {
      kind?: "http";
      scheme?: "http" | "https";
      resources: Record<string, Resource>;
      headers?: Record<string, string>;
      /** Reflect any Origin but null, with credentials. */
      reflectOrigin?: boolean;
      /** Allow the Origin null, with credentials. */
      reflectNull?: boolean;
      echoTrace?: boolean;
      fallback?: Resource;
    }
  | { kind: "tcp"; port: number; greeting?: string; replies: Record<string, string> }
  | { kind: "dns"; txt: string }
  | { kind: "ssl"; altNames: string[] };

export type TemplateTargets = Record<string, { match: TargetSpec; twin: TargetSpec }>;

export const TEMPLATE_TARGETS: TemplateTargets = JSON.parse(
  readFileSync(new URL("./template-targets.json", import.meta.url), "utf8"),
);

const HARDENED = {
  "content-security-policy": "default-src 'self'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
};

export const targetHost = (id: string, variant: "match" | "twin") => `${id}--${variant}.targets.test`;

function respond(
  site: Extract<TargetSpec, { resources: unknown }>,
  request: IncomingMessage,
  response: ServerResponse,
) {
  const path = (request.url ?? "/").split("?")[0];
  const base = { ...(site.headers ?? HARDENED) };
  if (site.echoTrace && request.method === "TRACE") {
    const echoed = [
      `TRACE ${request.url} HTTP/1.1`,
      ...Object.entries(request.headers).map(([n, v]) => `${n}: ${v}`),
    ].join("\r\n");
    response.writeHead(200, { ...base, "content-type": "message/http" });
    return response.end(echoed);
  }
  const resource = site.resources[path];
  const found = resource && (!resource.method || resource.method === request.method) ? resource : undefined;
  const chosen = found ?? site.fallback ?? { status: 404, body: "<html><body>Not Found</body></html>" };
  const headers: Record<string, string> = {
    "content-type": "text/html; charset=utf-8",
    ...base,
    ...chosen.headers,
  };
  const origin = request.headers.origin;
  if (origin && ((site.reflectOrigin && origin !== "null") || (site.reflectNull && origin === "null"))) {
    headers["access-control-allow-origin"] = origin;
    headers["access-control-allow-credentials"] = "true";
  }
  response.writeHead(chosen.status ?? 200, headers);
  const body = chosen.bodyHex ? Buffer.from(chosen.bodyHex, "hex") : Buffer.from(chosen.body ?? "");
  response.end(request.method === "HEAD" ? undefined : body);
}

export interface RunningTargets extends Closable {
  httpPort: number;
  httpsPort: number;
  /** Where a template's tcp target listens (its own address, the template's port). */
  tcp: Record<string, { match: string; twin: string }>;
  /** The lab name server answering zone targets.test, as host:port. */
  resolver: string;
  /** Where a template's ssl target listens, as address and port. */
  ssl: Record<string, { match: { address: string; port: number }; twin: { address: string; port: number } }>;
  address: string;
}

/** Starts every target of `targets` on `address` (HTTP, HTTPS, DNS) and 127.117.9.N (TCP). */
export async function startTemplateTargets(
  address = "127.117.0.1",
  targets: TemplateTargets = TEMPLATE_TARGETS,
): Promise<RunningTargets> {
  const closables: Closable[] = [];
  const sites = new Map<string, Extract<TargetSpec, { resources: unknown }>>();
  for (const [id, pair] of Object.entries(targets))
    for (const variant of ["match", "twin"] as const) {
      const spec = pair[variant];
      if (!spec.kind || spec.kind === "http")
        sites.set(targetHost(id, variant), spec as Extract<TargetSpec, { resources: unknown }>);
    }
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    const host = (request.headers.host ?? "").replace(/:\d+$/, "");
    const site = sites.get(host);
    if (!site) {
      response.writeHead(421, { "content-type": "text/plain" });
      return response.end("no such target");
    }
    respond(site, request, response);
  };
  const authority = await createCertificateAuthority();
  const httpServer = createHttpServer(handler);
  const httpPort = await withRandomPort(async (port) => {
    closables.push(await listenTcp(httpServer, address, port));
    return port;
  });
  const certificate = await authority.issue({
    commonName: "targets.test",
    altNames: ["*.targets.test"],
    key: "ecdsa-p256",
    issuer: "lab-ca",
  });
  const httpsServer = createHttpsServer({ key: certificate.keyPem, cert: certificate.chainPem }, handler);
  const httpsPort = await withRandomPort(async (port) => {
    closables.push(await listenTcp(httpsServer, address, port));
    return port;
  });

  const tcp: RunningTargets["tcp"] = {};
  const ssl: RunningTargets["ssl"] = {};
  const zones = new ZoneSet();
  const txt: Array<{ name: string; type: "TXT"; data: string }> = [];
  let next = 1;
  for (const [id, pair] of Object.entries(targets)) {
    const places: Record<string, unknown> = {};
    for (const variant of ["match", "twin"] as const) {
      const spec = pair[variant];
      if (spec.kind === "tcp") {
        const host = `127.117.9.${next++}`;
        const server = createTcpServer((socket) => {
          socket.on("error", () => {});
          if (spec.greeting) socket.write(spec.greeting);
          socket.on("data", (data) => {
            const text = data.toString("latin1");
            const reply = Object.entries(spec.replies).find(([command]) => text.startsWith(command))?.[1];
            socket.write(reply ?? "ERROR\r\n");
          });
        });
        closables.push(await listenTcp(server, host, spec.port));
        places[variant] = host;
      } else if (spec.kind === "dns") {
        txt.push({ name: `${id}--${variant}.targets.test`, type: "TXT", data: spec.txt });
      } else if (spec.kind === "ssl") {
        const issued = await authority.issue({
          commonName: spec.altNames[0],
          altNames: spec.altNames,
          key: "ecdsa-p256",
          issuer: "lab-ca",
        });
        const server = createTlsServer({ key: issued.keyPem, cert: issued.chainPem }, (socket) => {
          socket.on("error", () => {});
          socket.end();
        });
        const port = await withRandomPort(async (p) => {
          closables.push(await listenTcp(server, address, p));
          return p;
        });
        places[variant] = { address, port };
      }
    }
    if (places.match && typeof places.match === "string") tcp[id] = places as { match: string; twin: string };
    if (places.match && typeof places.match === "object") ssl[id] = places as RunningTargets["ssl"][string];
  }
  zones.addZone({
    name: "targets.test",
    axfr: false,
    reverse: false,
    records: [
      {
        name: "targets.test",
        type: "SOA",
        data: {
          mname: "ns.targets.test",
          rname: "hostmaster.targets.test",
          serial: 1,
          refresh: 3600,
          retry: 600,
          expire: 86400,
          minimum: 60,
        },
      },
      ...txt,
    ] as never,
  });
  const dns = createDnsServer(zones);
  const endpoint = await dns.listen(address);
  closables.push(dns);
  return {
    address,
    httpPort,
    httpsPort,
    tcp,
    ssl,
    resolver: `${endpoint.host}:${endpoint.port}`,
    async close() {
      httpServer.closeAllConnections();
      httpsServer.closeAllConnections();
      await Promise.all(closables.map((closable) => closable.close()));
    },
  };
}
