/**
 * Loopback stand-ins for the services Debian does not package (Elasticsearch, CouchDB, Consul, the
 * Docker Engine API, the kubelet and Kubernetes API, a container registry, a metrics exporter, MongoDB,
 * ZooKeeper, VNC, Telnet, SQL Server, an Oracle listener) and for the UDP services of the probe pass.
 * Each answers what its protocol's documentation says the real server answers to the one request the
 * check sends — exposed on `127.122.20.1`, locked down (401/403, an authentication error, a refused
 * TLS handshake) on `127.122.20.2`; UDP responders on `127.122.22.1`.
 */
import { createSocket, type RemoteInfo } from "node:dgram";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer, type Socket } from "node:net";
import { createCertificateAuthority } from "./certificates.ts";
import { bindUdp, type Closable, handlesReleased, listenTcp } from "./sockets.ts";

export const FAKE_EXPOSED = "127.122.20.1";
export const FAKE_LOCKED = "127.122.20.2";
export const FAKE_UDP = "127.122.22.1";

export interface FakeService {
  name: string;
  port: number;
  service: string;
  /** The issue the exposed fake must raise. */
  issue: string;
  /** Whether there is a locked-down twin on FAKE_LOCKED (databases and Telnet have none: the fix is not listening). */
  twin: boolean;
}

type Handler = (request: IncomingMessage, response: ServerResponse, exposed: boolean) => void;

const json = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
};

const HTTP_FAKES: Array<FakeService & { tls?: boolean; path: string; handler: Handler }> = [
  {
    name: "elasticsearch",
    port: 9200,
    service: "elasticsearch",
    issue: "elasticsearch_unauthenticated",
    twin: true,
    path: "/",
    handler: (_q, r, exposed) =>
      exposed
        ? json(r, 200, {
            name: "node-1",
            cluster_name: "lab",
            version: { number: "8.11.1", lucene_version: "9.8.0" },
            tagline: "You Know, for Search",
          })
        : json(r, 401, {
            error: { type: "security_exception", reason: "missing authentication credentials" },
            status: 401,
          }),
  },
  {
    name: "couchdb",
    port: 5984,
    service: "couchdb",
    issue: "couchdb_unauthenticated",
    twin: true,
    path: "/_all_dbs",
    handler: (_q, r, exposed) =>
      exposed
        ? json(r, 200, ["_replicator", "_users", "orders"])
        : json(r, 401, { error: "unauthorized", reason: "You are not authorized to access this db." }),
  },
  {
    name: "consul",
    port: 8500,
    service: "consul",
    issue: "consul_unauthenticated",
    twin: true,
    path: "/v1/agent/self",
    handler: (_q, r, exposed) => {
      if (!exposed) {
        r.writeHead(403, { "content-type": "text/plain" });
        return r.end(
          "Permission denied: token with AccessorID '00000000-0000-0000-0000-000000000002' lacks permission",
        );
      }
      json(r, 200, {
        Config: { Datacenter: "dc1", NodeName: "lab", Version: "1.17.0" },
        Member: { Name: "lab", Port: 8301 },
      });
    },
  },
  {
    name: "docker",
    port: 2375,
    service: "docker",
    issue: "docker_api_unauthenticated",
    twin: true,
    path: "/version",
    handler: (_q, r, exposed) =>
      exposed
        ? json(r, 200, {
            Version: "24.0.7",
            ApiVersion: "1.43",
            MinAPIVersion: "1.12",
            Os: "linux",
            Arch: "amd64",
          })
        : json(r, 401, { message: "authorization denied by plugin" }),
  },
  {
    name: "kubelet",
    port: 10250,
    tls: true,
    service: "kubelet",
    issue: "kubelet_unauthenticated",
    twin: true,
    path: "/pods",
    handler: (_q, r, exposed) => {
      if (exposed)
        return json(r, 200, {
          kind: "PodList",
          apiVersion: "v1",
          metadata: {},
          items: [{ metadata: { name: "web-0" } }],
        });
      r.writeHead(401, { "content-type": "text/plain" });
      r.end("Unauthorized");
    },
  },
  {
    name: "kubernetes",
    port: 6443,
    tls: true,
    service: "kubernetes",
    issue: "kubernetes_api_unauthenticated",
    twin: true,
    path: "/api/v1/namespaces",
    handler: (_q, r, exposed) =>
      exposed
        ? json(r, 200, {
            kind: "NamespaceList",
            apiVersion: "v1",
            items: [{ metadata: { name: "default" } }],
          })
        : json(r, 403, {
            kind: "Status",
            apiVersion: "v1",
            status: "Failure",
            message: 'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces"',
            reason: "Forbidden",
            code: 403,
          }),
  },
  {
    name: "registry",
    port: 5000,
    service: "docker-registry",
    issue: "container_registry_catalog",
    twin: true,
    path: "/v2/_catalog",
    handler: (_q, r, exposed) =>
      exposed
        ? json(r, 200, { repositories: ["billing/api", "web"] })
        : json(r, 401, { errors: [{ code: "UNAUTHORIZED", message: "authentication required" }] }),
  },
  {
    name: "node-exporter",
    port: 9100,
    service: "prometheus",
    issue: "metrics_endpoint_exposed",
    twin: true,
    path: "/metrics",
    handler: (_q, r, exposed) => {
      if (!exposed) {
        r.writeHead(401, { "www-authenticate": 'Basic realm="metrics"' });
        return r.end("Unauthorized\n");
      }
      r.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      r.end(
        '# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu="0",mode="idle"} 1234.5\n',
      );
    },
  },
];

// --- MongoDB: OP_MSG answers in BSON ---------------------------------------------------------------

type Bson = number | string | Bson[] | { [key: string]: Bson };

function bson(document: { [key: string]: Bson }): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of Object.entries(document)) {
    const name = Buffer.from(`${key}\0`);
    if (typeof value === "number") {
      const number = Buffer.alloc(8);
      number.writeDoubleLE(value);
      parts.push(Buffer.from([0x01]), name, number);
    } else if (typeof value === "string") {
      const text = Buffer.from(`${value}\0`);
      const length = Buffer.alloc(4);
      length.writeInt32LE(text.length);
      parts.push(Buffer.from([0x02]), name, length, text);
    } else if (Array.isArray(value)) {
      parts.push(
        Buffer.from([0x04]),
        name,
        bson(Object.fromEntries(value.map((item, i) => [String(i), item]))),
      );
    } else parts.push(Buffer.from([0x03]), name, bson(value));
  }
  const body = Buffer.concat([...parts, Buffer.from([0])]);
  const length = Buffer.alloc(4);
  length.writeInt32LE(body.length + 4);
  return Buffer.concat([length, body]);
}

function mongodb(exposed: boolean) {
  return (socket: Socket) => {
    socket.on("error", () => {});
    let buffer = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.length < 16 || buffer.length < buffer.readInt32LE(0)) return;
      const requestId = buffer.readInt32LE(4);
      buffer = Buffer.alloc(0);
      const reply = exposed
        ? bson({ databases: [{ name: "admin" }, { name: "shop" }], ok: 1 })
        : bson({
            ok: 0,
            errmsg: "command listDatabases requires authentication",
            code: 13,
            codeName: "Unauthorized",
          });
      const header = Buffer.alloc(16);
      header.writeInt32LE(16 + 4 + 1 + reply.length, 0);
      header.writeInt32LE(99, 4);
      header.writeInt32LE(requestId, 8);
      header.writeInt32LE(2013, 12);
      socket.write(Buffer.concat([header, Buffer.alloc(4), Buffer.from([0]), reply]));
    });
  };
}

const zookeeper = (exposed: boolean) => (socket: Socket) => {
  socket.on("error", () => {});
  socket.once("data", () => {
    socket.end(
      exposed
        ? "Zookeeper version: 3.8.3-6ad6d364c7c0bcf0de452d54ebefa3058098ab56, built on 2023-10-05 10:34 UTC\nLatency min/avg/max: 0/0.0/0\nReceived: 3\nSent: 2\nConnections: 1\nOutstanding: 0\nZxid: 0x0\nMode: standalone\nNode count: 5\n"
        : "srvr is not executed because it is not in the whitelist.\n",
    );
  });
};

/** RFB 3.8 (RFC 6143): version, then the security types offered. */
const vnc = (exposed: boolean) => (socket: Socket) => {
  socket.on("error", () => {});
  socket.write("RFB 003.008\n");
  socket.once("data", () => socket.write(Buffer.from(exposed ? [2, 1, 2] : [1, 2])));
};

/** Telnet (RFC 854/1091): options negotiated, then a login prompt. */
const telnet = (socket: Socket) => {
  socket.on("error", () => {});
  socket.write(Buffer.from([0xff, 0xfd, 0x18, 0xff, 0xfd, 0x20, 0xff, 0xfb, 0x01]));
  setTimeout(() => socket.destroyed || socket.write("\r\nlab login: "), 20);
};

/** SQL Server's PRELOGIN answer: a tabular-result packet, VERSION 15.0.2000, ENCRYPTION off. */
const mssql = (socket: Socket) => {
  socket.on("error", () => {});
  socket.once("data", () => {
    const options = Buffer.from([0x00, 0x00, 0x0b, 0x00, 0x06, 0x01, 0x00, 0x11, 0x00, 0x01, 0xff]);
    const data = Buffer.concat([options, Buffer.from([15, 0, 0x07, 0xd0, 0, 0]), Buffer.from([0x02])]);
    const header = Buffer.from([0x04, 0x01, 0, 0, 0, 0, 1, 0]);
    header.writeUInt16BE(8 + data.length, 2);
    socket.write(Buffer.concat([header, data]));
  });
};

/** An Oracle listener refusing a CONNECT for an unknown service (a TNS REFUSE packet). */
const oracle = (socket: Socket) => {
  socket.on("error", () => {});
  socket.once("data", () => {
    const text = Buffer.from(
      "(DESCRIPTION=(TMP=)(VSNNUM=318767104)(ERR=12514)(ERROR_STACK=(ERROR=(CODE=12514)(EMFI=4))))",
    );
    const header = Buffer.alloc(12);
    header.writeUInt16BE(12 + text.length, 0);
    header[4] = 4; // REFUSE
    header.writeUInt16BE(text.length, 10);
    socket.write(Buffer.concat([header, text]));
  });
};

const TCP_FAKES: Array<FakeService & { serve: (exposed: boolean) => (socket: Socket) => void }> = [
  {
    name: "mongodb",
    port: 27017,
    service: "mongodb",
    issue: "mongodb_unauthenticated",
    twin: true,
    serve: mongodb,
  },
  {
    name: "zookeeper",
    port: 2181,
    service: "zookeeper",
    issue: "zookeeper_unauthenticated",
    twin: true,
    serve: zookeeper,
  },
  { name: "vnc", port: 5900, service: "vnc", issue: "vnc_no_authentication", twin: true, serve: vnc },
  {
    name: "telnet",
    port: 23,
    service: "telnet",
    issue: "telnet_cleartext_login",
    twin: false,
    serve: () => telnet,
  },
  {
    name: "mssql",
    port: 1433,
    service: "ms-sql-s",
    issue: "database_exposed_mssql",
    twin: false,
    serve: () => mssql,
  },
  {
    name: "oracle",
    port: 1521,
    service: "oracle-tns",
    issue: "database_exposed_oracle",
    twin: false,
    serve: () => oracle,
  },
];

export const FAKES: FakeService[] = [...HTTP_FAKES, ...TCP_FAKES].map(
  ({ name, port, service, issue, twin }) => ({
    name,
    port,
    service,
    issue,
    twin,
  }),
);

// --- UDP responders ------------------------------------------------------------------------------

type Responder = (message: Buffer) => Buffer | undefined;

const UDP_RESPONDERS: Record<number, { service: string; answer: Responder }> = {
  53: {
    service: "domain",
    // REFUSED, as an authoritative server answers a name outside its zones.
    answer: (q) =>
      Buffer.concat([q.subarray(0, 2), Buffer.from([0x80, 0x05]), q.subarray(4, 12), q.subarray(12)]),
  },
  123: {
    service: "ntp",
    answer: (q) => {
      const reply = Buffer.alloc(48);
      reply[0] = 0x24; // v4, mode 4 server
      reply[1] = 2; // stratum
      q.copy(reply, 24, 40, 48); // origin timestamp = the client's transmit timestamp
      return reply;
    },
  },
  137: {
    service: "netbios-ns",
    answer: (q) => {
      const names = Buffer.alloc(1 + 18);
      names[0] = 1;
      names.write("LABHOST        ", 1, "latin1");
      const rdata = Buffer.concat([names, Buffer.alloc(46)]);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(rdata.length);
      return Buffer.concat([
        q.subarray(0, 2),
        Buffer.from([0x84, 0x00, 0, 0, 0, 1, 0, 0, 0, 0]),
        q.subarray(12, 12 + 34),
        Buffer.from([0, 0x21, 0, 1, 0, 0, 0, 0]),
        length,
        rdata,
      ]);
    },
  },
  500: {
    service: "isakmp",
    // An INFORMATIONAL notify (NO-PROPOSAL-CHOSEN) echoing the initiator cookie.
    answer: (q) =>
      Buffer.concat([
        q.subarray(0, 8),
        Buffer.alloc(8, 0x11),
        Buffer.from([0x0b, 0x10, 0x05, 0]),
        Buffer.alloc(4),
        Buffer.from([0, 0, 0, 40]),
        Buffer.from([0, 0, 0, 12, 0, 0, 0, 1, 1, 0, 0, 14]),
      ]),
  },
  69: {
    service: "tftp",
    answer: () => Buffer.concat([Buffer.from([0, 5, 0, 1]), Buffer.from("File not found\0")]),
  },
  1900: {
    service: "ssdp",
    answer: () =>
      Buffer.from(
        "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1800\r\nST: upnp:rootdevice\r\nUSN: uuid:lab::upnp:rootdevice\r\nSERVER: Linux/5.10 UPnP/1.0 MiniUPnPd/2.2\r\nLOCATION: http://127.122.22.1:5000/rootDesc.xml\r\n\r\n",
      ),
  },
  1194: {
    service: "openvpn",
    answer: (q) =>
      Buffer.concat([
        Buffer.from([0x40]),
        Buffer.alloc(8, 0x22),
        Buffer.from([1]),
        Buffer.from([0, 0, 0, 0]),
        q.subarray(1, 9),
        Buffer.from([0, 0, 0, 0]),
      ]),
  },
  5060: {
    service: "sip",
    answer: (q) => {
      const text = q.toString("latin1");
      const headers = text.split("\r\n").filter((line) => /^(via|from|to|call-id|cseq):/i.test(line));
      return Buffer.from(
        `SIP/2.0 200 OK\r\n${headers.join("\r\n")}\r\nServer: Asterisk PBX 18.10.0\r\nContent-Length: 0\r\n\r\n`,
      );
    },
  },
  5353: {
    service: "mdns",
    answer: (q) =>
      Buffer.concat([Buffer.from([0, 0, 0x84, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]), q.subarray(12, 12)]),
  },
};

export const UDP_FAKES = Object.entries(UDP_RESPONDERS).map(([port, { service }]) => ({
  port: Number(port),
  service,
}));

export interface FakeLab {
  stop(): Promise<void>;
}

export async function startFakeLab(): Promise<FakeLab> {
  const ca = await createCertificateAuthority();
  const leaf = await ca.issue({
    commonName: "api.lab.test",
    altNames: ["api.lab.test"],
    key: "ecdsa-p256",
    issuer: "lab-ca",
  });
  const closables: Closable[] = [];
  const stop = async () => {
    await Promise.all(closables.splice(0).map((closable) => closable.close()));
    await handlesReleased();
  };
  try {
    for (const exposed of [true, false]) {
      const ip = exposed ? FAKE_EXPOSED : FAKE_LOCKED;
      for (const fake of HTTP_FAKES) {
        const handler = (request: IncomingMessage, response: ServerResponse) => {
          if (new URL(request.url ?? "/", "http://x").pathname !== fake.path)
            return json(response, 404, { error: "not found" });
          fake.handler(request, response, exposed);
        };
        const server = fake.tls
          ? createHttpsServer({ key: leaf.keyPem, cert: leaf.chainPem }, handler)
          : createHttpServer(handler);
        server.on("tlsClientError", () => {});
        closables.push(await listenTcp(server, ip, fake.port));
      }
      for (const fake of TCP_FAKES) {
        if (!exposed && !fake.twin) continue;
        closables.push(await listenTcp(createServer(fake.serve(exposed)), ip, fake.port));
      }
    }
    for (const [port, { answer }] of Object.entries(UDP_RESPONDERS)) {
      const socket = createSocket("udp4");
      socket.on("message", (message: Buffer, remote: RemoteInfo) => {
        const reply = answer(message);
        if (reply) socket.send(reply, remote.port, remote.address);
      });
      closables.push(await bindUdp(socket, FAKE_UDP, Number(port)));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { stop };
}
