/**
 * Remote logins and databases reachable by anyone: Telnet (a cleartext login offered), VNC without
 * authentication (security type None offered; the handshake stops before ClientInit, so no session is
 * opened), and the database servers that answer a client's first protocol message (MySQL/MariaDB's
 * greeting, PostgreSQL's SSLRequest, SQL Server's pre-login, an Oracle listener's TNS reply).
 */
import { check, type ExposureCheck, excerpt, talk } from "./check.ts";

export const telnetCleartext = check({
  name: "telnet_cleartext_login",
  prettyName: "Telnet login over clear text",
  severity: 3,
  confidence: "confirmed",
  category: "cleartext_credentials",
  description:
    "The host offers a Telnet login. Telnet sends the user name, the password and the whole session unencrypted, readable by anyone on the path.",
  remediation:
    "Turn the Telnet service off and use SSH; on network devices, enable SSH and disable Telnet on every line.",
  references: [{ type: "description", uri: "https://cwe.mitre.org/data/definitions/319.html" }],
  services: ["telnet"],
  ports: [23, 2323],
  async prove(target) {
    const answer = await talk(target, (conversation) =>
      // Option negotiation (IAC DO/WILL …) or a login prompt is a Telnet server.
      conversation.read(
        (bytes) =>
          bytes.length >= 3 &&
          (bytes[0] === 0xff || /login|user ?name|password/i.test(bytes.toString("latin1"))),
      ),
    );
    if (!answer || answer.length < 3) return undefined;
    const negotiates = answer[0] === 0xff && [0xfb, 0xfc, 0xfd, 0xfe].includes(answer[1]);
    const prompt = /(login|user ?name|password)\s*:/i.test(answer.toString("latin1"));
    if (!negotiates && !prompt) return undefined;
    return { sent: "(nothing: the server speaks first)", received: excerpt(answer, 200) };
  },
});

const VNC_SECURITY: Record<number, string> = {
  0: "invalid",
  1: "None",
  2: "VNC Authentication",
  5: "RA2",
  16: "Tight",
  18: "TLS",
  19: "VeNCrypt",
  30: "Apple Remote Desktop",
};

export const vncNoAuthentication = check({
  name: "vnc_no_authentication",
  prettyName: "VNC server without authentication",
  severity: 1,
  confidence: "confirmed",
  category: "unauthenticated_access",
  description:
    "The VNC server offers the security type None: anyone who connects sees and controls the desktop without a password.",
  remediation:
    "Require a password or better (VeNCrypt with TLS), and reach VNC only through a VPN or an SSH tunnel.",
  references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc6143#section-7.1.2" }],
  services: ["vnc"],
  ports: [5900, 5901],
  async prove(target) {
    const found = await talk(target, async (conversation) => {
      const greeting = (await conversation.readBytes(12)).toString("latin1");
      const version = /^RFB (\d{3})\.(\d{3})\n/.exec(greeting);
      if (!version) return undefined;
      // Answer with the highest version both speak: 3.8, 3.7 or 3.3 (3.889 is Apple's 3.8).
      const minor = Number(version[1]) > 3 || Number(version[2]) >= 8 ? 8 : Number(version[2]) === 7 ? 7 : 3;
      const reply = `RFB 003.00${minor}\n`;
      conversation.send(reply);
      if (minor < 7) {
        // RFB 3.3: the server picks the type, a 32-bit number.
        const type = await conversation.readBytes(4);
        return type.length >= 4 ? { greeting, reply, types: [type.readUInt32BE(0)] } : undefined;
      }
      // RFB 3.7+: a count, then that many types (one read: the server sends them together).
      const list = await conversation.read((bytes) => bytes.length >= 1 && bytes.length >= 1 + bytes[0]);
      const count = list[0] ?? 0;
      if (count === 0 || list.length < 1 + count) return undefined;
      return { greeting, reply, types: [...list.subarray(1, 1 + count)] };
    });
    if (!found?.types.includes(1)) return undefined;
    return {
      sent: found.reply.trim(),
      received: excerpt(
        `${found.greeting.trim()}; security types: ${found.types.map((type) => VNC_SECURITY[type] ?? type).join(", ")}`,
      ),
      security_types: found.types.map((type) => VNC_SECURITY[type] ?? String(type)),
    };
  },
});

const DATABASE = {
  severity: 3 as const,
  confidence: "confirmed" as const,
  category: "exposed_service",
  remediation:
    "Bind the database to a private address or firewall its port so that only the application servers reach it; require TLS and strong credentials.",
};

export const mysqlReachable = check({
  ...DATABASE,
  name: "database_exposed_mysql",
  prettyName: "MySQL/MariaDB server reachable",
  description:
    "A MySQL or MariaDB server answers with its login greeting to anyone who connects: its accounts can be attacked by password guessing and its version's vulnerabilities tried.",
  references: [
    { type: "description", uri: "https://dev.mysql.com/doc/refman/8.0/en/security-guidelines.html" },
  ],
  services: ["mysql"],
  ports: [3306],
  async prove(target) {
    const greeting = await talk(target, (conversation) =>
      conversation.read((bytes) => bytes.length >= 4 && bytes.length >= 4 + bytes.readUIntLE(0, 3)),
    );
    // Protocol 10 greeting: length (3), sequence 0, protocol 10, version NUL-terminated.
    if (!greeting || greeting.length < 6 || greeting[3] !== 0 || greeting[4] !== 10) return undefined;
    const end = greeting.indexOf(0, 5);
    if (end <= 5) return undefined;
    const version = greeting.toString("latin1", 5, end);
    return {
      sent: "(nothing: the server greets first)",
      received: excerpt(`protocol 10, server version ${version}`),
      version,
    };
  },
});

export const postgresqlReachable = check({
  ...DATABASE,
  name: "database_exposed_postgresql",
  prettyName: "PostgreSQL server reachable",
  description:
    "A PostgreSQL server answers a client's first message to anyone who connects: its accounts can be attacked by password guessing and its version's vulnerabilities tried.",
  references: [{ type: "description", uri: "https://www.postgresql.org/docs/current/auth-pg-hba-conf.html" }],
  services: ["postgresql"],
  ports: [5432],
  async prove(target) {
    // SSLRequest: length 8, code 80877103. A PostgreSQL server answers one byte, S or N.
    const request = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
    const answer = await talk(target, async (conversation) => {
      conversation.send(request);
      return conversation.readBytes(1);
    });
    if (answer?.length !== 1 || (answer[0] !== 0x53 && answer[0] !== 0x4e)) return undefined;
    return {
      sent: "SSLRequest (\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f)",
      received: answer[0] === 0x53 ? "S (TLS offered)" : "N (no TLS: logins cross the network in clear)",
      tls_offered: answer[0] === 0x53,
    };
  },
});

/** A TDS 7 PRELOGIN with only the VERSION option, as every SQL Server client sends first. */
const PRELOGIN = Buffer.from([
  0x12, 0x01, 0x00, 0x14, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06, 0x00, 0x06, 0xff, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x00,
]);

export const mssqlReachable = check({
  ...DATABASE,
  name: "database_exposed_mssql",
  prettyName: "Microsoft SQL Server reachable",
  description:
    "A Microsoft SQL Server answers the TDS pre-login to anyone who connects: its accounts (often `sa`) can be attacked by password guessing and its version's vulnerabilities tried.",
  references: [
    {
      type: "description",
      uri: "https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-tds/60f56408-0188-4cd5-8b90-25c6f2423868",
    },
  ],
  services: ["ms-sql-s"],
  ports: [1433],
  async prove(target) {
    const answer = await talk(target, async (conversation) => {
      conversation.send(PRELOGIN);
      return conversation.read((bytes) => bytes.length >= 8 && bytes.length >= bytes.readUInt16BE(2));
    });
    // A tabular-result packet (type 4) whose first option token is VERSION (0).
    if (!answer || answer.length < 14 || answer[0] !== 0x04 || answer[8] !== 0x00) return undefined;
    const at = 8 + answer.readUInt16BE(9);
    const version =
      answer.length >= at + 4 ? `${answer[at]}.${answer[at + 1]}.${answer.readUInt16BE(at + 2)}` : undefined;
    return { sent: "TDS PRELOGIN (VERSION option)", received: excerpt(answer, 120), version };
  },
});

/** A TNS CONNECT asking the listener for its version: the reply is a TNS packet whatever it says. */
function tnsConnect(): Buffer {
  const data = Buffer.from("(CONNECT_DATA=(COMMAND=version))");
  const header = Buffer.alloc(58);
  header.writeUInt16BE(58 + data.length, 0); // packet length
  header[4] = 1; // CONNECT
  header.writeUInt16BE(0x013a, 8); // version 314
  header.writeUInt16BE(0x012c, 10); // lowest compatible version 300
  header.writeUInt16BE(0x0c41, 12); // service options
  header.writeUInt16BE(0x2000, 14); // session data unit
  header.writeUInt16BE(0x7fff, 16); // maximum transmission data unit
  header.writeUInt16BE(0x7f08, 18); // NT protocol characteristics
  header.writeUInt16BE(0x0001, 22); // value of 1 in hardware
  header.writeUInt16BE(data.length, 24); // connect data length
  header.writeUInt16BE(58, 26); // connect data offset
  return Buffer.concat([header, data]);
}

const TNS_TYPES: Record<number, string> = {
  2: "ACCEPT",
  4: "REFUSE",
  5: "REDIRECT",
  11: "RESEND",
  12: "MARKER",
};

export const oracleReachable = check({
  ...DATABASE,
  name: "database_exposed_oracle",
  prettyName: "Oracle database listener reachable",
  description:
    "An Oracle TNS listener answers anyone who connects: its services can be enumerated, accounts attacked by password guessing, and its version's vulnerabilities tried.",
  references: [
    { type: "description", uri: "https://docs.oracle.com/en/database/oracle/oracle-database/19/netrf/" },
  ],
  services: ["oracle-tns", "oracle"],
  ports: [1521],
  async prove(target) {
    const answer = await talk(target, async (conversation) => {
      conversation.send(tnsConnect());
      return conversation.read((bytes) => bytes.length >= 8 && bytes.length >= bytes.readUInt16BE(0));
    });
    if (!answer || answer.length < 8 || answer.readUInt16BE(0) < 8 || !(answer[4] in TNS_TYPES))
      return undefined;
    return {
      sent: "TNS CONNECT (CONNECT_DATA=(COMMAND=version))",
      received: excerpt(`TNS ${TNS_TYPES[answer[4]]}: ${answer.subarray(8).toString("latin1")}`),
    };
  },
});

export const REMOTE_AND_DATABASE_CHECKS: readonly ExposureCheck[] = [
  telnetCleartext,
  vncNoAuthentication,
  mysqlReachable,
  postgresqlReachable,
  mssqlReachable,
  oracleReachable,
];
