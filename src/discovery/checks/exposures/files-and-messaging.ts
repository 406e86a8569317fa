/**
 * Anonymous access to message brokers and file services: MQTT (CONNECT, CONNACK, DISCONNECT — never
 * SUBSCRIBE or PUBLISH), FTP (USER anonymous, PASS, PWD, QUIT — never STOR), rsync (the module list,
 * which the daemon gives before any authentication).
 */
import type { Conversation } from "../../net/conversation.ts";
import { check, type ExposureCheck, excerpt, shown, talk } from "./check.ts";

const ANONYMOUS = "anonymous_access";

/** An MQTT 3.1.1 CONNECT without user name or password, clean session, keep-alive 10 s. */
function mqttConnect(clientId: string): Buffer {
  const id = Buffer.from(clientId);
  const variable = Buffer.concat([
    Buffer.from([0x00, 0x04]),
    Buffer.from("MQTT"),
    Buffer.from([0x04, 0x02, 0x00, 0x0a]),
    Buffer.from([id.length >> 8, id.length & 0xff]),
    id,
  ]);
  return Buffer.concat([Buffer.from([0x10, variable.length]), variable]);
}

const CONNACK_CODES: Record<number, string> = {
  0: "accepted",
  1: "unacceptable protocol version",
  2: "identifier rejected",
  3: "server unavailable",
  4: "bad user name or password",
  5: "not authorised",
};

export const mqttAnonymous = check({
  name: "mqtt_anonymous_access",
  prettyName: "MQTT broker accepts anonymous clients",
  severity: 2,
  confidence: "confirmed",
  category: ANONYMOUS,
  description:
    "The MQTT broker accepted a connection without user name or password: anyone can subscribe to its topics (often sensor data, commands and credentials) and publish commands to the devices listening.",
  remediation:
    "Disallow anonymous clients (Mosquitto: allow_anonymous false with a password_file), use ACLs per topic, and serve MQTT over TLS (8883).",
  references: [{ type: "description", uri: "https://mosquitto.org/man/mosquitto-conf-5.html" }],
  services: ["mqtt", "secure-mqtt", "ibm-mqisdp"],
  ports: [1883, 8883],
  async prove(target) {
    const connect = mqttConnect(`sightline-${Math.random().toString(36).slice(2, 10)}`);
    const answer = await talk(target, async (conversation) => {
      conversation.send(connect);
      const connack = await conversation.readBytes(4);
      // DISCONNECT, so the broker ends the session cleanly (no will message is ever set).
      if (connack[0] === 0x20 && connack[3] === 0) conversation.send(Buffer.from([0xe0, 0x00]));
      return connack;
    });
    if (!answer || answer.length < 4 || answer[0] !== 0x20 || answer[1] !== 0x02) return undefined;
    const code = answer[3];
    if (code !== 0) return undefined;
    return {
      sent: "CONNECT (MQTT 3.1.1, clean session, no user name, no password), then DISCONNECT",
      received: `CONNACK return code ${code} (${CONNACK_CODES[code]})`,
    };
  },
});

/** Reads one FTP reply: lines until "NNN " (multi-line replies start "NNN-"). */
function ftpReply(conversation: Conversation): Promise<Buffer> {
  return conversation.read((bytes) => /(^|\n)\d{3} [^\n]*\n/.test(bytes.toString("latin1")));
}

const code = (reply: Buffer) => Number(/(?:^|\n)(\d{3}) [^\n]*\n/.exec(reply.toString("latin1"))?.[1] ?? 0);

export const ftpAnonymous = check({
  name: "ftp_anonymous_login",
  prettyName: "Anonymous FTP login allowed",
  severity: 3,
  confidence: "confirmed",
  category: ANONYMOUS,
  description:
    "The FTP server logs in the user `anonymous` with any password: its files are readable by anyone, and writable too if uploads are allowed. FTP also carries every password in clear text.",
  remediation:
    "Disable anonymous login (vsftpd: anonymous_enable=NO; ProFTPD: remove the <Anonymous> block) unless the server is meant to be a public mirror, and prefer SFTP.",
  references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc1635" }],
  services: ["ftp"],
  ports: [21],
  async prove(target) {
    const transcript: string[] = [];
    const logged = await talk(target, async (conversation) => {
      const greeting = await ftpReply(conversation);
      transcript.push(greeting.toString("latin1"));
      if (code(greeting) !== 220) return false;
      conversation.send("USER anonymous\r\n");
      const user = await ftpReply(conversation);
      transcript.push(user.toString("latin1"));
      if (code(user) === 230) return true;
      if (code(user) !== 331) return false;
      conversation.send("PASS sightline@example.com\r\n");
      const pass = await ftpReply(conversation);
      transcript.push(pass.toString("latin1"));
      if (code(pass) !== 230) return false;
      conversation.send("PWD\r\n");
      transcript.push((await ftpReply(conversation)).toString("latin1"));
      conversation.send("QUIT\r\n");
      return true;
    });
    if (!logged) return undefined;
    return {
      sent: "USER anonymous\nPASS sightline@example.com\nPWD\nQUIT",
      received: excerpt(transcript.join("")),
    };
  },
});

export const rsyncModules = check({
  name: "rsync_modules_listed",
  prettyName: "rsync daemon lists its modules",
  severity: 3,
  confidence: "confirmed",
  category: ANONYMOUS,
  description:
    "The rsync daemon lists its modules to anyone; modules without `auth users` can then be downloaded (and uploaded to, unless read only).",
  remediation:
    "Expose rsync only to the hosts that need it (hosts allow), require `auth users` with a secrets file on every module, and set `list = no`.",
  references: [{ type: "description", uri: "https://download.samba.org/pub/rsync/rsyncd.conf.5" }],
  services: ["rsync"],
  ports: [873],
  async prove(target) {
    let version = "";
    const answer = await talk(target, async (conversation) => {
      const greeting = await conversation.readUntil("\n");
      version = /^@RSYNCD: ([\d.]+)/.exec(greeting.toString("latin1"))?.[1] ?? "";
      if (!version) return undefined;
      // Protocol 31: from 32 on the client must also list digests, which this listing does not need.
      conversation.send("@RSYNCD: 31.0\n");
      // An empty module name asks for the list; the daemon ends it with @RSYNCD: EXIT.
      conversation.send("\n");
      return conversation.readUntil("@RSYNCD: EXIT");
    });
    const text = answer?.toString("latin1") ?? "";
    if (!text.includes("@RSYNCD: EXIT")) return undefined;
    const modules = text
      .split("\n")
      // Each module is "name<padding>\tcomment" (the MOTD before the list has no such form).
      .filter((line) => /^[^\s@]\S*\s*\t/.test(line))
      .map((line) => line.split(/\s/)[0]);
    if (modules.length === 0) return undefined;
    return {
      sent: shown("@RSYNCD: 31.0\n\n"),
      rsync_protocol: version,
      received: excerpt(text),
      modules: modules.slice(0, 50),
    };
  },
});

export const FILE_AND_MESSAGING_CHECKS: readonly ExposureCheck[] = [
  mqttAnonymous,
  ftpAnonymous,
  rsyncModules,
];
