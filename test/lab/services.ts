import { randomBytes } from "node:crypto";
import { createServer as createHttpServer, type RequestListener } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer, type Socket } from "node:net";
import type { CertificateAuthority } from "./certificates.ts";
import type { DnsServer } from "./dns-server.ts";
import { type Closable, listenTcp } from "./sockets.ts";
import type { CertificateFacts, ServiceKind, ServiceSpec, VirtualHost, WebOptions } from "./types.ts";

export interface ServiceContext {
  dns: DnsServer;
  ca: CertificateAuthority;
}

export interface RunningService extends Closable {
  spec: ServiceSpec;
  /** What a scanner should see: the first line sent, the product it names. */
  banner?: string;
  product?: string;
  certificate?: CertificateFacts;
}

type Started = Omit<RunningService, "spec">;
type Starter<S extends ServiceSpec> = (ip: string, spec: S, context: ServiceContext) => Promise<Started>;

const STARTERS: { [K in ServiceKind]: Starter<Extract<ServiceSpec, { kind: K }>> } = {
  http: async (ip, spec) => ({
    ...(await listenTcp(createHttpServer(webHandler(spec)), ip, spec.port)),
    product: spec.server,
  }),

  https: async (ip, spec, { ca }) => {
    const issued = await ca.issue(spec.certificate);
    const server = createHttpsServer({ key: issued.keyPem, cert: issued.chainPem }, webHandler(spec));
    // A scanner's aborted handshake is expected traffic, not a lab failure.
    server.on("tlsClientError", () => {});
    return { ...(await listenTcp(server, ip, spec.port)), product: spec.server, certificate: issued.facts };
  },

  ssh: (ip, spec) =>
    // Sends its identification and then waits, as OpenSSH does before key exchange.
    lineService(
      ip,
      spec.port,
      spec.banner ?? "SSH-2.0-OpenSSH_8.2p1 Ubuntu-4ubuntu0.5",
      () => () => undefined,
    ),

  smtp: async (ip, spec) => {
    const banner = spec.banner ?? `220 ${spec.hostname} ESMTP Postfix (Ubuntu)`;
    const greeting = spec.clock
      ? () => `${banner}; ${new Date().toUTCString().replace("GMT", "+0000")}`
      : banner;
    const started = await lineService(ip, spec.port, greeting, () => (line) => {
      const verb = line.split(" ")[0]!.toUpperCase();
      if (verb === "EHLO")
        return `250-${spec.hostname}\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n`;
      if (verb === "HELO") return `250 ${spec.hostname}\r\n`;
      if (verb === "NOOP") return "250 2.0.0 Ok\r\n";
      if (verb === "QUIT") return { text: "221 2.0.0 Bye\r\n", end: true };
      return "502 5.5.2 Error: command not recognized\r\n";
    });
    // What a scanner keeps of a greeting with the time: the time as "…" (it changes on every connection).
    return spec.clock ? { ...started, banner: `${banner}; …` } : started;
  },

  ftp: (ip, spec) =>
    lineService(ip, spec.port, spec.banner ?? "220 (vsFTPd 3.0.3)", () => (line) => {
      const verb = line.split(" ")[0]!.toUpperCase();
      if (verb === "USER") return "331 Please specify the password.\r\n";
      if (verb === "PASS") return "530 Login incorrect.\r\n";
      if (verb === "QUIT") return { text: "221 Goodbye.\r\n", end: true };
      return "530 Please login with USER and PASS.\r\n";
    }),

  mysql: async (ip, spec) => {
    const server = createServer((socket) => {
      socket.on("error", () => {});
      socket.write(mysqlHandshake(spec.version));
      // Whatever the client's handshake response, refuse it as a server without the account would.
      socket.once("data", () => socket.end(mysqlAccessDenied()));
    });
    return { ...(await listenTcp(server, ip, spec.port)), product: `MySQL ${spec.version}` };
  },

  redis: async (ip, spec) => ({
    ...(await lineService(ip, spec.port, undefined, () => redisSession(spec.version))),
    product: `Redis ${spec.version}`,
  }),

  dns: async (ip, spec, { dns }) => {
    const endpoint = await dns.listen(ip, spec.port);
    return { close: endpoint.close };
  },
};

export async function startService(
  ip: string,
  spec: ServiceSpec,
  context: ServiceContext,
): Promise<RunningService> {
  const start = STARTERS[spec.kind] as Starter<ServiceSpec>;
  return { ...(await start(ip, spec, context)), spec };
}

// --- web --------------------------------------------------------------------------------------

/** The virtual host claiming a Host name, if any (otherwise the service's own site answers). */
export function siteFor(spec: WebOptions, host: string): VirtualHost | undefined {
  const name = host.toLowerCase();
  return spec.virtualHosts?.find((site) => site.names.includes(name));
}

function webHandler(spec: WebOptions): RequestListener {
  return (request, response) => {
    // Name-based virtual hosting: the Host header (without its port) picks the site.
    const site = siteFor(spec, (request.headers.host ?? "").replace(/:\d+$/, ""));
    response.setHeader("Server", site?.server ?? spec.server);
    const handler = site?.handler ?? spec.handler;
    if (handler) return handler(request, response);
    const found = request.url === "/" || request.url?.startsWith("/?");
    response.writeHead(found ? 200 : 404, { "Content-Type": "text/html; charset=utf-8" });
    response.end(
      found
        ? page(spec.title, spec.body ?? "")
        : page("404 Not Found", "<p>The requested URL was not found on this server.</p>"),
    );
  };
}

function page(title: string, body: string): string {
  const escaped = title.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  return `<!DOCTYPE html>\n<html><head><title>${escaped}</title></head><body><h1>${escaped}</h1>${body}</body></html>\n`;
}

// --- line-oriented protocols (SSH identification, SMTP, FTP, Redis) ------------------------------

type LineReply = string | { text: string; end: true } | undefined;

/**
 * A TCP service that may greet with one line (a function: made anew for each connection), then answers
 * each CRLF-terminated line. `session` makes a fresh line handler per connection, for protocols that keep
 * state.
 */
async function lineService(
  ip: string,
  port: number,
  greeting: string | (() => string) | undefined,
  session: () => (line: string) => LineReply,
): Promise<Started> {
  const server = createServer((socket: Socket) => {
    const answer = session();
    let pending = "";
    socket.setEncoding("latin1");
    socket.on("error", () => {});
    if (greeting !== undefined) socket.write(`${typeof greeting === "function" ? greeting() : greeting}\r\n`);
    socket.on("data", (chunk: string) => {
      pending += chunk;
      for (let end = pending.indexOf("\n"); end >= 0 && !socket.writableEnded; end = pending.indexOf("\n")) {
        const reply = answer(pending.slice(0, end).replace(/\r$/, ""));
        pending = pending.slice(end + 1);
        if (typeof reply === "string") socket.write(reply);
        else if (reply) socket.end(reply.text);
      }
    });
  });
  return {
    ...(await listenTcp(server, ip, port)),
    banner: typeof greeting === "function" ? undefined : greeting,
  };
}

/** Redis accepts inline commands and RESP arrays (`*2`, `$4`, `INFO`, …); enough for PING, INFO, QUIT. */
function redisSession(version: string): (line: string) => LineReply {
  let args: string[] = [];
  let awaiting = 0;
  return (line) => {
    if (awaiting === 0 && line.startsWith("*")) {
      awaiting = Number(line.slice(1));
      args = [];
      return undefined;
    }
    if (awaiting > 0) {
      if (line.startsWith("$")) return undefined;
      args.push(line);
      if (--awaiting > 0) return undefined;
    } else {
      args = line.trim().split(/\s+/);
    }
    const command = args[0]?.toUpperCase();
    if (command === "PING") return "+PONG\r\n";
    if (command === "QUIT") return { text: "+OK\r\n", end: true };
    if (command === "INFO") {
      const info = `# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\nos:Linux 5.4.0-77-generic x86_64\r\n`;
      return `$${Buffer.byteLength(info)}\r\n${info}\r\n`;
    }
    return `-ERR unknown command '${args[0] ?? ""}'\r\n`;
  };
}

// --- MySQL --------------------------------------------------------------------------------------

/** A MySQL protocol-10 initial handshake packet, as a 5.7 server sends on connect. */
function mysqlHandshake(version: string): Buffer {
  // Scramble bytes are printable and never NUL, as MySQL's own are.
  const scramble = Buffer.from(randomBytes(20).map((b) => 0x21 + (b % 94)));
  const u16 = (n: number) => Buffer.from([n & 0xff, n >> 8]);
  const payload = Buffer.concat([
    Buffer.from([10]),
    Buffer.from(`${version}\0`, "latin1"),
    Buffer.from([1, 0, 0, 0]), // connection id
    scramble.subarray(0, 8),
    Buffer.from([0]),
    u16(0xf7ff), // capabilities, low half
    Buffer.from([33]), // utf8_general_ci
    u16(0x0002), // SERVER_STATUS_AUTOCOMMIT
    u16(0x81ff), // capabilities, high half
    Buffer.from([21]), // auth plugin data length
    Buffer.alloc(10),
    scramble.subarray(8),
    Buffer.from([0]),
    Buffer.from("mysql_native_password\0", "latin1"),
  ]);
  return mysqlPacket(0, payload);
}

function mysqlAccessDenied(): Buffer {
  const message = "Access denied for user 'root'@'localhost' (using password: YES)";
  return mysqlPacket(
    2,
    Buffer.concat([Buffer.from([0xff, 0x15, 0x04]), Buffer.from(`#28000${message}`, "latin1")]),
  );
}

function mysqlPacket(sequence: number, payload: Buffer): Buffer {
  const header = Buffer.from([
    payload.length & 0xff,
    (payload.length >> 8) & 0xff,
    payload.length >> 16,
    sequence,
  ]);
  return Buffer.concat([header, payload]);
}
