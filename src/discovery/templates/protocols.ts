/**
 * The `tcp`/`network`, `dns` and `ssl` blocks of a template. Each connects only where discovery
 * already is (the service's own address and port, the name's own resolver, the certificate's own
 * endpoint), under the run's throttle and signal, reads a bounded number of bytes for a bounded time,
 * and hands named parts to the same matchers and extractors as HTTP.
 */

import { type Socket, connect as tcpConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { certificateFacts, handshake } from "../modules/tls.ts";
import type { DnsClient, DnsOutcome } from "../net/dns-client.ts";
import { modernContext, type NodeTlsVersion } from "../net/secure-contexts.ts";
import { acceptedAt, helloProbe, TLS_VERSIONS, WEAK_CIPHERS } from "../net/tls-hello.ts";
import type { DslVariables } from "./dsl.ts";
import { hostVariables } from "./host-variables.ts";
import type { TemplateHit } from "./http.ts";
import { evidence, interpolate, runOperators } from "./operators.ts";
import type { DnsBlock, NetworkBlock, Operators, SslBlock, Template } from "./template.ts";

/** The most bytes one network template reads from a service, whatever its `read-size` says. */
export const MAX_NETWORK_READ = 64 * 1024;

function variablesOf(template: Template, base: DslVariables): DslVariables {
  const variables = { ...base };
  for (const [name, value] of template.variables) variables[name] = interpolate(value, variables);
  return variables;
}

function hitOf(operators: Operators, variables: DslVariables, request: TemplateHit["request"], uri: string) {
  const result = runOperators(operators, {
    variables,
    bytes: { data: Buffer.from(String(variables.data ?? ""), "latin1") },
  });
  if (!result.matched) return undefined;
  return {
    request,
    uri,
    matched: evidence(operators, { variables }),
    matcherNames: result.matcherNames,
    extracted: result.extracted,
  } satisfies TemplateHit;
}

/** How long a read waits for more once a reply has begun to arrive. */
const READ_SETTLE_MS = 30;

/** A socket's bytes as they arrive, read in bounded pieces with a time bound each. */
class SocketReader {
  #buffer = Buffer.alloc(0);
  #closed = false;
  #wake: (() => void) | undefined;
  #total = 0;

  constructor(socket: Socket, most: number) {
    socket.on("data", (chunk: Buffer) => {
      const room = most - this.#total;
      if (room <= 0) return socket.destroy();
      const kept = chunk.subarray(0, room);
      this.#total += kept.length;
      this.#buffer = Buffer.concat([this.#buffer, kept]);
      this.#wake?.();
    });
    const close = () => {
      this.#closed = true;
      this.#wake?.();
    };
    socket.on("close", close);
    socket.on("error", close);
  }

  /**
   * Up to `bytes` bytes, as a socket read gives them: whatever has arrived once the first bytes are
   * there (and a moment more for the rest of a reply), or nothing after `timeoutMs`.
   */
  async read(bytes: number, timeoutMs: number, signal: AbortSignal): Promise<Buffer> {
    let deadline = Date.now() + timeoutMs;
    let settling = false;
    while (this.#buffer.length < bytes && !this.#closed && !signal.aborted && Date.now() < deadline) {
      if (this.#buffer.length > 0 && !settling) {
        settling = true;
        deadline = Math.min(deadline, Date.now() + READ_SETTLE_MS);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
    const out = this.#buffer.subarray(0, bytes);
    this.#buffer = this.#buffer.subarray(out.length);
    return out;
  }
}

export interface ServiceTarget {
  address: string;
  port: number;
  /** The name the service was reached by, when it was. */
  hostname?: string;
}

export interface NetworkEnvironment {
  throttle<T>(work: () => Promise<T>): Promise<T>;
  signal: AbortSignal;
  timeoutMs: number;
  mayTouch(address: string): boolean;
}

/** Whether a network block is meant for this port: the ports it names, or any port when it names none. */
export const wantsPort = (block: NetworkBlock, port: number) =>
  block.ports.length === 0 || block.ports.includes(port);

async function exchangeOnce(
  block: NetworkBlock,
  tls: boolean,
  target: ServiceTarget,
  variables: DslVariables,
  env: NetworkEnvironment,
) {
  const socket = tls
    ? tlsConnect({
        host: target.address,
        port: target.port,
        rejectUnauthorized: false,
        secureContext: modernContext(),
        servername: target.hostname,
      })
    : tcpConnect({ host: target.address, port: target.port });
  const reader = new SocketReader(socket, MAX_NETWORK_READ);
  const sent: Buffer[] = [];
  const received: Buffer[] = [];
  const named: DslVariables = {};
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("connect timed out")), env.timeoutMs);
      socket.once(tls ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    for (const input of block.inputs) {
      if (env.signal.aborted) break;
      const data = Buffer.isBuffer(input.data)
        ? input.data
        : Buffer.from(interpolate(input.data, variables), "latin1");
      if (data.length > 0) {
        socket.write(data);
        sent.push(data);
      }
      if (input.read) {
        const bytes = await reader.read(Math.min(input.read, MAX_NETWORK_READ), env.timeoutMs, env.signal);
        received.push(bytes);
        if (input.name) named[input.name] = bytes.toString("latin1");
      }
    }
    if (!block.inputs.some((input) => input.read))
      received.push(await reader.read(Math.min(block.readSize, MAX_NETWORK_READ), env.timeoutMs, env.signal));
  } finally {
    socket.destroy();
  }
  return { sent: Buffer.concat(sent), received: Buffer.concat(received), named };
}

/** Every hit of the template's network blocks on one TCP service. */
export async function runNetworkTemplate(
  template: Template,
  target: ServiceTarget,
  env: NetworkEnvironment,
): Promise<TemplateHit[]> {
  const hits: TemplateHit[] = [];
  if (!env.mayTouch(target.address)) return hits;
  const host = target.hostname ?? target.address;
  const variables = variablesOf(template, {
    Hostname: `${host}:${target.port}`,
    Host: host,
    Port: String(target.port),
    FQDN: host,
    ...hostVariables(host),
    ip: target.address,
  });
  for (const block of template.network)
    for (const tls of block.tls) {
      if (!wantsPort(block, target.port) || env.signal.aborted) continue;
      const hit = await networkHit(block, tls, target, host, variables, env);
      if (hit) {
        hits.push(hit);
        break;
      }
    }
  return hits;
}

async function networkHit(
  block: NetworkBlock,
  tls: boolean,
  target: ServiceTarget,
  host: string,
  variables: DslVariables,
  env: NetworkEnvironment,
): Promise<TemplateHit | undefined> {
  let result: Awaited<ReturnType<typeof exchangeOnce>>;
  try {
    result = await env.throttle(() => exchangeOnce(block, tls, target, variables, env));
  } catch {
    return undefined;
  }
  const data = result.received.toString("latin1");
  const parts = {
    ...variables,
    ...result.named,
    data,
    raw: data,
    body: data,
    response: data,
    request: result.sent.toString("latin1"),
  };
  const uri = `${tls ? "tls" : "tcp"}://${host}:${target.port}`;
  return hitOf(block, parts, { method: "TCP", url: uri, headers: {}, hostname: host }, uri);
}

const RCODES: Record<string, number> = { nxdomain: 3, nodata: 0, timeout: 2, error: 2, cancelled: 2 };

/** Every hit of the template's dns blocks on one name. */
export async function runDnsTemplate(
  template: Template,
  name: string,
  client: DnsClient,
): Promise<TemplateHit[]> {
  const hits: TemplateHit[] = [];
  const variables = variablesOf(template, {
    FQDN: name,
    Hostname: name,
    Host: name,
    ...hostVariables(name),
  });
  for (const block of template.dns) {
    let question: string;
    try {
      question = interpolate(block.name, variables).replace(/\.$/, "");
    } catch {
      continue;
    }
    const outcome = await lookup(client, block, question);
    const answers = outcome.ok ? outcome.value : [];
    const status = outcome.ok
      ? "NOERROR"
      : outcome.code === "nxdomain"
        ? "NXDOMAIN"
        : outcome.code === "nodata"
          ? "NOERROR"
          : "SERVFAIL";
    const answer = answers.map((data) => `${question}.\t0\tIN\t${block.type}\t${data}`).join("\n");
    const raw = `;; ->>HEADER<<- opcode: QUERY, status: ${status}\n;; QUESTION SECTION:\n;${question}.\tIN\t${block.type}\n\n;; ANSWER SECTION:\n${answer}\n`;
    const parts: DslVariables = {
      ...variables,
      answer,
      raw,
      body: raw,
      response: raw,
      rcode: outcome.ok ? 0 : (RCODES[outcome.code] ?? 2),
      question: `${question}. IN ${block.type}`,
      ns: "",
      extra: "",
      request: `${question}. IN ${block.type}`,
    };
    const hit = hitOf(
      block,
      parts,
      { method: `DNS ${block.type}`, url: `dns:${question}`, headers: {}, hostname: question },
      `dns:${question}?type=${block.type}`,
    );
    if (hit) hits.push(hit);
  }
  return hits;
}

async function lookup(client: DnsClient, block: DnsBlock, name: string): Promise<DnsOutcome<string[]>> {
  const text = <T>(outcome: DnsOutcome<T[]>, show: (value: T) => string): DnsOutcome<string[]> =>
    outcome.ok ? { ok: true, value: outcome.value.map(show) } : outcome;
  switch (block.type) {
    case "A":
      return client.a(name);
    case "AAAA":
      return client.aaaa(name);
    case "CNAME":
      return text(await client.cname(name), (value) => `${value}.`);
    case "NS":
      return text(await client.ns(name), (value) => `${value}.`);
    case "TXT":
      return text(await client.txt(name), (value) => JSON.stringify(value));
    case "MX":
      return text(await client.mx(name), (value) => `${value.priority} ${value.exchange}.`);
    case "CAA":
      return text(await client.caa(name), (value) => {
        const [tag, data] = Object.entries(value).find(([key]) => key !== "critical") ?? ["", ""];
        return `${value.critical ?? 0} ${tag} ${JSON.stringify(String(data))}`;
      });
    case "SRV":
      return text(
        await client.srv(name),
        (value) => `${value.priority} ${value.weight} ${value.port} ${value.name}.`,
      );
    case "PTR":
      return text(await client.ptr(name), (value) => `${value}.`);
    default: {
      const soa = await client.soa(name);
      return soa.ok
        ? { ok: true, value: [`${soa.value.nsname}. ${soa.value.hostmaster}. ${soa.value.serial}`] }
        : soa;
    }
  }
}

/** Every hit of the template's ssl blocks on one TLS endpoint: the facts of its handshake and certificate. */
export async function runSslTemplate(
  template: Template,
  target: ServiceTarget,
  env: NetworkEnvironment,
): Promise<TemplateHit[]> {
  if (!env.mayTouch(target.address)) return [];
  const host = target.hostname ?? target.address;
  // One handshake per version range the blocks ask for (most ask none: Node's defaults).
  const answers = new Map<string, Promise<Record<string, unknown> | undefined>>();
  const answerFor = (versions: SslBlock["versions"]) => {
    const key = versions ? `${versions.min}-${versions.max}` : "";
    let answer = answers.get(key);
    if (!answer) {
      answer = sslAnswer(target, host, versions, env);
      answers.set(key, answer);
    }
    return answer;
  };
  const hits: TemplateHit[] = [];
  for (const block of template.ssl) {
    const response = await answerFor(block.versions);
    if (!response || env.signal.aborted) continue;
    const variables: DslVariables = {
      ...variablesOf(template, { Host: host, Hostname: `${host}:${target.port}`, Port: String(target.port) }),
    };
    for (const [key, value] of Object.entries(response))
      variables[key] = Array.isArray(value) ? value.join(",") : (value as string | number | boolean);
    variables.response = JSON.stringify(response);
    variables.raw = variables.response;
    variables.body = variables.response;
    const uri = `tls://${host}:${target.port}`;
    const hit = hitOf(block, variables, { method: "TLS", url: uri, headers: {}, hostname: host }, uri);
    if (hit) hits.push(hit);
  }
  return hits;
}

/** A cipher suite's OpenSSL name where it is a weak one Sightline names, else its IANA number in hex. */
const cipherName = (suite: number) => WEAK_CIPHERS[suite] ?? `0x${suite.toString(16).padStart(4, "0")}`;

/** "TLSv1.2" → "tls12", "TLSv1" → "tls10", "SSLv3" → "sslv3", as nuclei names versions. */
const nucleiVersion = (protocol: string) =>
  protocol === "TLSv1" ? "tls10" : protocol.toLowerCase().replace(/^tlsv/, "tls").replace(".", "");

/**
 * What a handshake offering `versions` (all Node offers when none) tells: the version and cipher, and
 * the certificate's facts. SSLv3, which Node cannot offer, is asked with a ClientHello written by hand
 * (tls-hello.ts): it tells the version and cipher only. Undefined when the server refused.
 */
async function sslAnswer(
  target: ServiceTarget,
  host: string,
  versions: SslBlock["versions"],
  env: NetworkEnvironment,
): Promise<Record<string, unknown> | undefined> {
  const common = { host, ip: target.address, port: String(target.port) };
  if (versions?.max === "sslv3") {
    const answer = await env.throttle(() =>
      helloProbe(
        { host: target.address, port: target.port, timeoutMs: env.timeoutMs, signal: env.signal },
        TLS_VERSIONS.SSLv3,
      ),
    );
    if (!acceptedAt(answer, "SSLv3") || !answer?.accepted) return undefined;
    return { ...common, tls_version: "sslv3", cipher: cipherName(answer.cipher) };
  }
  // Node offers nothing older than TLS 1.0: a range from SSLv3 is asked from TLS 1.0 up.
  const range = versions
    ? { min: versions.min === "sslv3" ? "tls10" : versions.min, max: versions.max }
    : undefined;
  const result = await env.throttle(() =>
    handshake(target.address, target.port, {
      timeoutMs: env.timeoutMs,
      signal: env.signal,
      ...(range ? { versions: range as { min: NodeTlsVersion; max: NodeTlsVersion } } : {}),
    }),
  );
  if (!result.ok || !result.certificate) return undefined;
  const facts = certificateFacts(result.certificate);
  return {
    ...common,
    tls_version: nucleiVersion(result.protocol),
    cipher: result.cipher,
    not_before: facts.notBefore,
    not_after: facts.notAfter,
    subject_dn: facts.subject,
    subject_cn: facts.subjectCommonName,
    subject_an: facts.altNames,
    issuer_dn: facts.issuer,
    issuer_cn: facts.issuerCommonName,
    serial: facts.serialNumber,
    expired: facts.expired,
    self_signed: facts.selfSigned,
    wildcard_certificate: [facts.subjectCommonName, ...facts.altNames].some((name) => name.startsWith("*.")),
    key_type: facts.keyType,
    key_size: facts.keySize,
    fingerprint_sha256: facts.sha256,
  };
}
