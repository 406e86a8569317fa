/**
 * Scope traps: a lab world (zone `trap.test`) whose names, CNAMEs and redirects lead into addresses a
 * scan must not touch, and listeners that count every connection they accept, so a test can prove that
 * none reached them. Used with `startLab({ world: trapWorld(...) })` by the scope tests; the default
 * world is untouched.
 */
import { createServer, type Socket } from "node:net";
import type { LabWorld } from "./types.ts";

export const TRAP_ZONE = "trap.test";

/** The sub-block of the lab's block a trap test denies: `${base}.66.0/24`. */
export const deniedBlock = (base: string) => `${base}.66.0/24`;
export const deniedAddress = (base: string) => `${base}.66.1`;

/** Host names of the redirector, each answering `/` with a redirect to one trap. */
export const REDIRECTORS = {
  "to-name": (_base: string, _port: number) => `http://denied.${TRAP_ZONE}/`,
  "to-address": (base: string, _port: number) => `http://${deniedAddress(base)}/`,
  "to-loopback": (_base: string, port: number) => `http://127.0.0.1:${port}/`,
  "to-metadata": (_base: string, _port: number) => "http://169.254.169.254/latest/meta-data/",
  "to-mapped": (_base: string, port: number) => `http://[::ffff:127.0.0.1]:${port}/`,
} as const;

/**
 * `trap.test`: a CNAME into the denied sub-block, names on loopback, on the cloud metadata address and
 * on IPv4-mapped and NAT64 spellings of loopback, and one allowed web host (`www`, `${base}.0.10`)
 * that redirects each of its REDIRECTORS names into a trap. `port` is the extra port the trap
 * listeners use (besides 22, 80 and 443); `onRequest` counts what reaches the allowed host.
 */
export function trapWorld(port: number, onRequest: () => void) {
  return (base: string): LabWorld => ({
    nameservers: [],
    bruteforceWords: [],
    zones: [
      {
        name: TRAP_ZONE,
        records: [
          { name: `cname.${TRAP_ZONE}`, type: "CNAME", data: `denied.${TRAP_ZONE}` },
          { name: `denied.${TRAP_ZONE}`, type: "A", data: deniedAddress(base) },
          { name: `loopback.${TRAP_ZONE}`, type: "A", data: "127.0.0.1" },
          { name: `metadata.${TRAP_ZONE}`, type: "A", data: "169.254.169.254" },
          { name: `mapped.${TRAP_ZONE}`, type: "AAAA", data: "::ffff:127.0.0.1" },
          { name: `nat64.${TRAP_ZONE}`, type: "AAAA", data: "64:ff9b::7f00:1" },
        ],
      },
    ],
    hosts: [
      {
        ip: `${base}.0.10`,
        names: [`www.${TRAP_ZONE}`, ...Object.keys(REDIRECTORS).map((name) => `${name}.${TRAP_ZONE}`)],
        services: [
          {
            kind: "http",
            port: 80,
            server: "nginx",
            title: "Trap",
            handler(request, response) {
              onRequest();
              const host = (request.headers.host ?? "").split(":")[0]!.replace(`.${TRAP_ZONE}`, "");
              const target = REDIRECTORS[host as keyof typeof REDIRECTORS];
              if (target) response.writeHead(302, { location: target(base, port) }).end();
              else response.writeHead(200, { "content-type": "text/html" }).end("<title>Trap</title>");
            },
          },
        ],
      },
    ],
  });
}

export interface CountingListener {
  readonly where: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

/** A TCP listener that counts and then closes every connection it accepts. */
export async function countingListener(host: string, port: number): Promise<CountingListener> {
  let accepted = 0;
  const server = createServer((socket: Socket) => {
    accepted++;
    socket.on("error", () => {});
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => resolve());
  });
  return {
    where: `${host}:${port}`,
    get accepted() {
      return accepted;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
