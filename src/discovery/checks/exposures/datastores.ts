/**
 * Datastores that answer an anonymous client: Redis (INFO), memcached (stats), MongoDB (listDatabases,
 * names only) and ZooKeeper (the `srvr` word). One read-only command each, answered in the product's
 * own framing, or nothing is raised.
 */
import { udpAsk } from "../../net/udp.ts";
import { check, type ExposureCheck, excerpt, shown, talk } from "./check.ts";

const UNAUTHENTICATED = "unauthenticated_access";

/** A RESP answer is whole: an error/simple line, or a bulk string of the length it announced. */
function respComplete(bytes: Buffer): boolean {
  const text = bytes.toString("latin1");
  const line = text.indexOf("\r\n");
  if (line < 0) return false;
  if (text[0] !== "$") return true;
  const length = Number(text.slice(1, line));
  return !Number.isFinite(length) || length < 0 || bytes.length >= line + 2 + length + 2;
}

export const redisOpen = check({
  name: "redis_unauthenticated",
  prettyName: "Redis answers without a password",
  severity: 1,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "Redis runs commands for a client that never authenticated: anyone can read and delete its data, and CONFIG SET / MODULE LOAD commonly turn this into code execution on the host.",
  remediation:
    "Set a password (requirepass, or ACL users with `user default off`), enable protected-mode, and bind Redis to a private address.",
  references: [
    { type: "description", uri: "https://redis.io/docs/latest/operate/oss_and_stack/management/security/" },
  ],
  services: ["redis"],
  ports: [6379],
  async prove(target) {
    const sent = "INFO server\r\n";
    const answer = await talk(target, async (conversation) => {
      conversation.send(sent);
      return conversation.read(respComplete);
    });
    const text = answer?.toString("latin1") ?? "";
    const version = /\r\nredis_version:([^\r\n]+)/.exec(text)?.[1];
    if (!text.startsWith("$") || !version) return undefined;
    return { sent: shown(sent), received: excerpt(text.replace(/^\$\d+\r\n/, "")), redis_version: version };
  },
});

export const memcachedOpen = check({
  name: "memcached_unauthenticated",
  prettyName: "memcached answers without authentication",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "memcached answers an anonymous client: anyone can read and overwrite cached data (sessions, tokens), and its UDP port amplifies denial-of-service attacks.",
  remediation:
    "Bind memcached to 127.0.0.1 or a private address (-l), disable UDP (-U 0), and enable SASL if clients must reach it over a network.",
  references: [{ type: "description", uri: "https://github.com/memcached/memcached/wiki/SASLHowto" }],
  services: ["memcached", "memcache"],
  ports: [11211],
  async prove(target) {
    const sent = "stats\r\n";
    const answer = await talk(target, async (conversation) => {
      conversation.send(sent);
      return conversation.read((bytes) =>
        /(\r\nEND\r\n|^END\r\n|ERROR[^\n]*\r\n)/.test(bytes.toString("latin1")),
      );
    });
    const text = answer?.toString("latin1") ?? "";
    const version = /^STAT version (\S+)/m.exec(text)?.[1];
    // The statistics must end as memcached ends them: a stream of STAT lines without END is not memcached.
    if (!/^STAT pid \d+/.test(text) || !version || !/\r\nEND\r\n$/.test(text)) return undefined;
    return { sent: shown(sent), received: excerpt(text), memcached_version: version };
  },
});

export const memcachedUdp = check({
  name: "memcached_udp_amplification",
  prettyName: "memcached answers over UDP (amplification)",
  severity: 2,
  confidence: "confirmed",
  category: "exposed_service",
  description:
    "memcached answers over UDP, where the source address is not checked: attackers send it small requests with a victim's address and it answers with large ones, tens of thousands of times the size (the 2018 memcached DDoS attacks).",
  remediation:
    "Disable UDP (memcached -U 0, the default since 1.5.6) and bind memcached to a private address.",
  references: [{ type: "description", uri: "https://nvd.nist.gov/vuln/detail/CVE-2018-1000115" }],
  services: ["memcached"],
  ports: [11211],
  transport: "udp",
  async prove(target) {
    const requestId = Math.floor(Math.random() * 0xffff);
    const frame = Buffer.alloc(8);
    frame.writeUInt16BE(requestId, 0);
    frame.writeUInt16BE(1, 4); // one datagram
    const answer = await udpAsk({
      host: target.address,
      port: target.port,
      payload: Buffer.concat([frame, Buffer.from("version\r\n")]),
      timeoutMs: target.timeoutMs,
      signal: target.signal,
      complete: (datagrams) => datagrams.some((d) => d.length > 8 && d.readUInt16BE(0) === requestId),
    });
    const reply = answer?.datagrams.find((d) => d.length > 8 && d.readUInt16BE(0) === requestId);
    const text = reply?.toString("latin1", 8) ?? "";
    if (!/^VERSION \S+\r\n/.test(text)) return undefined;
    return {
      sent: "UDP frame (request id, 1 datagram) + version",
      received: excerpt(text.trim()),
      memcached_version: text.slice(8).trim(),
    };
  },
});

// --- MongoDB: one OP_MSG, listDatabases with names only ------------------------------------------

type BsonValue = number | string | boolean | null | BsonDocument | BsonValue[] | undefined;
interface BsonDocument {
  [key: string]: BsonValue;
}

function bson(document: Record<string, number | string | boolean>): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of Object.entries(document)) {
    const name = Buffer.from(`${key}\0`);
    if (typeof value === "number") {
      const number = Buffer.alloc(4);
      number.writeInt32LE(value);
      parts.push(Buffer.from([0x10]), name, number);
    } else if (typeof value === "boolean")
      parts.push(Buffer.from([0x08]), name, Buffer.from([value ? 1 : 0]));
    else {
      const text = Buffer.from(`${value}\0`);
      const length = Buffer.alloc(4);
      length.writeInt32LE(text.length);
      parts.push(Buffer.from([0x02]), name, length, text);
    }
  }
  const body = Buffer.concat([...parts, Buffer.from([0])]);
  const length = Buffer.alloc(4);
  length.writeInt32LE(body.length + 4);
  return Buffer.concat([length, body]);
}

/** Reads the BSON types a server's answer uses; anything else ends the document (depth-bounded). */
export function parseBson(bytes: Buffer, at = 0, depth = 0): BsonDocument | undefined {
  if (depth > 8 || bytes.length < at + 5) return undefined;
  const end = at + bytes.readInt32LE(at);
  if (end > bytes.length || end < at + 5) return undefined;
  const document: BsonDocument = {};
  let offset = at + 4;
  while (offset < end - 1) {
    const type = bytes[offset++];
    const nameEnd = bytes.indexOf(0, offset);
    if (nameEnd < 0 || nameEnd >= end) return document;
    const key = bytes.toString("utf8", offset, nameEnd);
    offset = nameEnd + 1;
    switch (type) {
      case 0x01:
        document[key] = bytes.readDoubleLE(offset);
        offset += 8;
        break;
      case 0x02: {
        const length = bytes.readInt32LE(offset);
        document[key] = bytes.toString("utf8", offset + 4, offset + 4 + Math.max(0, length - 1));
        offset += 4 + length;
        break;
      }
      case 0x03:
      case 0x04: {
        const inner = parseBson(bytes, offset, depth + 1);
        document[key] = type === 0x04 && inner ? Object.values(inner) : inner;
        offset += bytes.readInt32LE(offset);
        break;
      }
      case 0x08:
        document[key] = bytes[offset] === 1;
        offset += 1;
        break;
      case 0x0a:
        document[key] = null;
        break;
      case 0x10:
        document[key] = bytes.readInt32LE(offset);
        offset += 4;
        break;
      case 0x11:
      case 0x12:
        document[key] = Number(bytes.readBigInt64LE(offset));
        offset += 8;
        break;
      default:
        return document;
    }
    if (offset > end) return undefined;
  }
  return document;
}

function opMsg(document: Buffer, requestId: number): Buffer {
  const header = Buffer.alloc(16);
  const flags = Buffer.alloc(4);
  const total = 16 + 4 + 1 + document.length;
  header.writeInt32LE(total, 0);
  header.writeInt32LE(requestId, 4);
  header.writeInt32LE(0, 8);
  header.writeInt32LE(2013, 12);
  return Buffer.concat([header, flags, Buffer.from([0]), document]);
}

export const mongodbOpen = check({
  name: "mongodb_unauthenticated",
  prettyName: "MongoDB lists its databases without authentication",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "MongoDB runs commands for a client that never authenticated: it listed its databases, so anyone can read, change or ransom their contents.",
  remediation:
    "Enable access control (security.authorization: enabled) with users, and bind MongoDB to a private address (net.bindIp).",
  references: [
    { type: "description", uri: "https://www.mongodb.com/docs/manual/administration/security-checklist/" },
  ],
  services: ["mongodb", "mongod"],
  ports: [27017, 27018],
  async prove(target) {
    const request = opMsg(bson({ listDatabases: 1, nameOnly: true, $db: "admin" }), 1);
    const answer = await talk(target, async (conversation) => {
      conversation.send(request);
      return conversation.read((bytes) => bytes.length >= 4 && bytes.length >= bytes.readInt32LE(0));
    });
    // header (16), flags (4), section kind 0 (1), then the reply document
    if (!answer || answer.length < 26 || answer.readInt32LE(12) !== 2013) return undefined;
    const reply = parseBson(answer, 21);
    if (reply?.ok !== 1 || !Array.isArray(reply.databases)) return undefined;
    const names = reply.databases
      .map((database) =>
        database && typeof database === "object" && !Array.isArray(database) ? database.name : undefined,
      )
      .filter((name): name is string => typeof name === "string");
    return {
      sent: 'OP_MSG {listDatabases: 1, nameOnly: true, $db: "admin"}',
      received: excerpt(JSON.stringify(reply)),
      databases: names.slice(0, 20),
    };
  },
});

export const zookeeperOpen = check({
  name: "zookeeper_unauthenticated",
  prettyName: "ZooKeeper answers anonymous clients",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "ZooKeeper answers an anonymous client's administrative command with its version, mode and node count; its znodes (often configuration and credentials of the services it coordinates) are readable unless each carries an ACL.",
  remediation:
    "Expose ZooKeeper only to its clients, enable SASL authentication, set ACLs on znodes, and allow no four-letter words (4lw.commands.whitelist).",
  references: [
    { type: "description", uri: "https://zookeeper.apache.org/doc/current/zookeeperAdmin.html#sc_4lw" },
  ],
  services: ["zookeeper"],
  ports: [2181],
  async prove(target) {
    const sent = "srvr";
    const answer = await talk(target, async (conversation) => {
      conversation.send(sent);
      return conversation.read();
    });
    const text = answer?.toString("latin1") ?? "";
    const version = /^Zookeeper version: ([^\n,]+)/m.exec(text)?.[1];
    if (!version || !/^Mode: /m.test(text)) return undefined;
    return {
      sent,
      received: excerpt(text),
      zookeeper_version: version,
      node_count: /^Node count: (\d+)/m.exec(text)?.[1],
    };
  },
});

export const DATASTORE_CHECKS: readonly ExposureCheck[] = [
  redisOpen,
  memcachedOpen,
  memcachedUdp,
  mongodbOpen,
  zookeeperOpen,
];
