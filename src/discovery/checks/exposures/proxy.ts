/**
 * Open HTTP proxy. The relayed request never leaves the collection's scope: the proxy is asked for a
 * URL on its own address and port (an address discovery was already allowed to touch), with a path
 * made up for this check. An open proxy relays it to itself, and the answer comes back through two
 * hops; the same path asked directly comes back through one. So the proof is the answer's hop count
 * (its Via header) grown by the relay — which a server that answers 200 to everything, or a proxy that
 * refuses (403/407), never shows. A proxy that adds no Via header is not proven (a missed finding,
 * never a false one).
 */
import { check, type ExposureCheck, excerpt } from "./check.ts";
import { type HttpAnswer, httpRequest } from "./http-request.ts";

/** Hops named in an answer's Via header ("1.1 a (squid), 1.1 b" is two). */
const hops = (answer: HttpAnswer) => (answer.headers.via ?? "").split(",").filter((hop) => hop.trim()).length;

export const openHttpProxy = check({
  name: "open_http_proxy",
  prettyName: "Open HTTP proxy",
  severity: 2,
  confidence: "confirmed",
  category: "misconfiguration",
  description:
    "The proxy relays requests for anyone: attackers hide behind it, reach internal addresses through it, and abuse it for spam and fraud.",
  remediation:
    "Allow only your own clients (Squid: http_access allow localnet, then http_access deny all; require proxy authentication) and never expose the proxy port to the internet.",
  references: [{ type: "description", uri: "https://wiki.squid-cache.org/SquidFaq/SecurityPitfalls" }],
  services: ["http-proxy", "squid-http", "socks"],
  ports: [3128, 8080, 8118, 8888],
  async prove(target) {
    if (!target.mayTouch(target.address)) return undefined;
    const host = target.address.includes(":") ? `[${target.address}]` : target.address;
    const path = `/sightline-proxy-check-${Math.random().toString(36).slice(2, 10)}`;
    const url = `http://${host}:${target.port}${path}`;
    const relayed = await httpRequest({ ...target, tls: false }, path, { absolute: url });
    if (!relayed || relayed.status === 403 || relayed.status === 407 || relayed.tls) return undefined;
    const direct = await httpRequest({ ...target, tls: false }, path);
    if (!direct || hops(relayed) <= hops(direct)) return undefined;
    return {
      sent: relayed.sent,
      received: excerpt(`HTTP ${relayed.status}\nVia: ${relayed.headers.via}\n${relayed.body}`),
      relayed_to: url,
      via: relayed.headers.via,
      direct_via: direct.headers.via ?? "",
    };
  },
});

export const PROXY_CHECKS: readonly ExposureCheck[] = [openHttpProxy];
