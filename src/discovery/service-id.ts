/**
 * Service identification: an open TCP port is named by what it answers, whatever its number. The
 * probes of src/discovery/probes/tcp.yaml are tried in order (those naming the port first): the
 * greeting the port scan read, a TLS handshake (after which the probes run again inside TLS), HTTP,
 * then the binary protocols. A final match ends it; a soft one (the protocol, not the product) leaves
 * only the probes that can tell more. Each probe is its own connection through the throttle, bounded
 * in bytes and time (net/exchange.ts); a port silent to several probes in a row is left unidentified.
 */
import { BANNER_MAX_CHARS, type ServiceIdentity } from "../core/service-identity.ts";
import { recogService, tellsMore } from "./fingerprint/recog-services.ts";
import { exchange } from "./net/exchange.ts";
import {
  type MatchedIdentity,
  matchAnswer,
  probeOrder,
  requestBytes,
  type ServiceProbe,
  serviceProbes,
} from "./service-probes.ts";
import { bannerText, mysqlVersion, portServiceName } from "./services.ts";
import { stableBanner } from "./volatile.ts";

/** The most an answer is read, in bytes (a Redis INFO or an Elasticsearch root fits). */
export const PROBE_MAX_BYTES = 16 * 1024;
/** A quiet gap this long after the last byte ends an answer. */
const IDLE_MS = 150;
/** This many probes in a row with no byte and no close: the port is not going to say anything. */
const SILENT_PROBES = 3;

export interface IdentifyOptions {
  host: string;
  port: number;
  /** What the port scan read on connect, if it waited for a greeting; `undefined` when it did not wait. */
  greeting?: Buffer;
  connectMs: number;
  firstByteMs: number;
  signal: AbortSignal;
  /** Runs one network exchange in a throttle slot of the host. */
  slot<T>(work: () => Promise<T>): Promise<T>;
  probes?: ServiceProbe[];
}

/** Protocols that say nothing of what they front. */
const GENERIC_WEB = new Set(["http", "https"]);

/** The TLS form of a protocol name where nmap has one. */
const TLS_NAMES: Record<string, string> = { http: "https" };

/**
 * What a service said, as text: the first line, printable (the clock of a greeting left out so the
 * service does not look changed on every run); a MySQL greeting as "MySQL <version>" (its salt varies).
 */
export function bannerOf(answer: Buffer): string {
  const mysql = mysqlVersion(answer);
  return mysql ? `MySQL ${mysql}` : stableBanner(bannerText(answer));
}

export async function identifyService(options: IdentifyOptions): Promise<ServiceIdentity> {
  const { host, port, signal } = options;
  const probes = probeOrder(options.probes ?? serviceProbes(), port);
  let best: (MatchedIdentity & { by: string }) | undefined;
  let starttls = false;
  let tls = false;
  let banner = options.greeting && options.greeting.length > 0 ? bannerOf(options.greeting) : "";
  let silent = 0;
  let tlsTried = false;

  const final = () => best !== undefined && !best.soft;
  const wanted = (probe: ServiceProbe): boolean => {
    if (probe.kind === "tls") return !tlsTried && !final() && (best === undefined || best.service === "ssl");
    if (probe.requires) {
      if (!best || !probe.requires.has(best.service)) return false;
      // A web site is not asked every API's paths: only on their ports, or when it answered like an API.
      if (GENERIC_WEB.has(best.service) && !best.api && !probe.ports.has(port)) return false;
      return probe.enrich || !final();
    }
    if (final()) return false;
    return best === undefined || best.service === "ssl" || probe.services.has(best.service);
  };
  const take = (found: MatchedIdentity, by: string) => {
    if (found.starttls) starttls = true;
    // A follow-up that only adds a fact (STARTTLS) leaves the identity as it was.
    if (
      !found.product &&
      !found.version &&
      best &&
      best.service === found.service &&
      !found.soft &&
      !best.soft
    )
      return;
    if (!best || best.soft || !found.soft) best = { ...found, product: found.product ?? best?.product, by };
  };

  const greetings = probes.find((probe) => probe.kind === "greeting");
  // Inside TLS a greeting is waited for only on the ports that have one; elsewhere the other probes see it.
  const insideTls = [
    ...probes.filter((probe) => probe.kind !== "tls" && (probe.kind !== "greeting" || probe.ports.has(port))),
    ...probes.filter((probe) => probe.kind === "greeting" && !probe.ports.has(port)),
  ];
  let queue = probes;
  for (let i = 0; i < queue.length && !signal.aborted; i++) {
    const probe = queue[i];
    if (!wanted(probe)) continue;
    if (probe.kind === "greeting" && !tls && options.greeting !== undefined) {
      // The port scan already waited for what the port says first.
      if (options.greeting.length > 0) {
        const found = matchAnswer(probe, options.greeting);
        if (found) take(found, probe.name);
      }
      continue;
    }
    if (probe.kind === "tls") {
      tlsTried = true;
      const result = await options.slot(() =>
        exchange({
          host,
          port,
          tls: true,
          handshakeOnly: true,
          connectMs: options.connectMs,
          // On a TLS port the handshake is the connection and has the connect limit; elsewhere a
          // server that does not answer a ClientHello is given the first-byte wait.
          firstByteMs: probe.ports.has(port) ? options.connectMs : options.firstByteMs,
          idleMs: 0,
          maxBytes: 0,
          signal,
        }),
      );
      if (result.secure) {
        tls = true;
        if (best?.service === "ssl") best = undefined;
        silent = 0;
        // Everything before the handshake is asked again, inside TLS.
        queue = insideTls;
        i = -1;
      }
      continue;
    }
    const result = await options.slot(() =>
      exchange({
        host,
        port,
        tls,
        send: probe.kind === "send" ? requestBytes(probe, host, port) : undefined,
        farewell: probe.farewell,
        greetingFirst: probe.greetingFirst,
        connectMs: options.connectMs,
        firstByteMs: options.firstByteMs,
        idleMs: IDLE_MS,
        maxBytes: PROBE_MAX_BYTES,
        signal,
        // A final match on a complete line ends the read; anything else waits for the quiet gap.
        complete: (answer) =>
          answer[answer.length - 1] === 0x0a && matchAnswer(probe, answer)?.soft === false,
      }),
    );
    if (!result.connected) {
      if (result.error === "timeout") break; // the port no longer accepts connections
      continue;
    }
    if (result.answer.length === 0) {
      if (!result.closed && ++silent >= SILENT_PROBES) break;
      continue;
    }
    silent = 0;
    if (probe.kind === "greeting" || banner === "") banner = bannerOf(result.answer);
    // A server that speaks first answers anything with its greeting first.
    const found =
      matchAnswer(probe, result.answer) ??
      (greetings && probe !== greetings ? matchAnswer(greetings, result.answer) : undefined);
    if (found) take(found, probe.name);
  }

  const fallback = portServiceName(port);
  if (!best) {
    return withRecog({
      service: tls ? (fallback === "http" ? "https" : "ssl") : fallback,
      tls,
      banner: banner.slice(0, BANNER_MAX_CHARS),
      identified_by: tls ? "tls" : "port",
    });
  }
  const identity: ServiceIdentity = {
    service: tls ? (TLS_NAMES[best.service] ?? best.service) : best.service,
    tls,
    banner: banner.slice(0, BANNER_MAX_CHARS),
    identified_by: best.by,
  };
  if (best.product) identity.product = best.product;
  if (best.version) identity.version = best.version;
  if (best.cpe) identity.cpe = best.cpe;
  if (best.info) identity.info = best.info;
  if (starttls) identity.starttls = true;
  return withRecog(identity);
}

/**
 * Recog's database for the protocol reads the banner too (or `text`, the part of an answer it is
 * written for: SNMP's sysDescr): its operating-system and hardware facts are
 * added, and its product replaces the probe's where it tells more (recog-services.ts tellsMore).
 * `product_rule` says which rule named the product.
 */
export function withRecog(identity: ServiceIdentity, text = identity.banner): ServiceIdentity {
  const recog = text ? recogService(identity.service, text) : undefined;
  if (!recog) {
    if (identity.product) identity.product_rule = `probe ${identity.identified_by}`;
    return identity;
  }
  Object.assign(identity, recog.facts);
  if (tellsMore(identity, recog)) {
    identity.product = recog.name;
    const version = `${recog.version}${recog.update}`;
    if (version) identity.version = version;
    else delete identity.version;
    if (recog.cpe) identity.cpe = recog.cpe;
    identity.product_rule = recog.rule;
  } else identity.product_rule = `probe ${identity.identified_by}`;
  return identity;
}
