/**
 * SMB null session: an anonymous SMB2 session (NTLMSSP with no user, no domain, no password) that is
 * then allowed to connect to the IPC$ share — from where users, groups, shares and policies are
 * enumerated over RPC. A server that grants the anonymous session but refuses IPC$ (Samba's
 * `restrict anonymous = 2`, Windows' RestrictAnonymous) is not exposed. Nothing is opened, read or
 * written on the share: the check disconnects after the tree connect.
 *
 * Written from MS-SMB2 (2.2.1 header, 2.2.3 NEGOTIATE, 2.2.5 SESSION_SETUP, 2.2.9 TREE_CONNECT) and
 * MS-NLMP (2.2.1 NEGOTIATE and AUTHENTICATE messages; 3.2.5.1.2: anonymous is an empty NT response and
 * a one-byte zero LM response). Dialects 2.0.2 and 2.1 only, which need no negotiate contexts.
 */
import type { Conversation } from "../../net/conversation.ts";
import { check, type ExposureCheck, talk } from "./check.ts";

const COMMAND = { negotiate: 0, sessionSetup: 1, logoff: 2, treeConnect: 3 } as const;
const STATUS = {
  success: 0,
  moreProcessing: 0xc0000016,
  accessDenied: 0xc0000022,
  logonFailure: 0xc000006d,
} as const;
const STATUS_NAMES: Record<number, string> = {
  [STATUS.success]: "STATUS_SUCCESS",
  [STATUS.moreProcessing]: "STATUS_MORE_PROCESSING_REQUIRED",
  [STATUS.accessDenied]: "STATUS_ACCESS_DENIED",
  [STATUS.logonFailure]: "STATUS_LOGON_FAILURE",
  3221225676: "STATUS_BAD_NETWORK_NAME",
  3221225987: "STATUS_USER_SESSION_DELETED",
};
const statusName = (status: number) => STATUS_NAMES[status] ?? `0x${status.toString(16).padStart(8, "0")}`;

/** NTLMSSP flags: UNICODE, REQUEST_TARGET, NTLM, ANONYMOUS, ALWAYS_SIGN, EXTENDED_SESSIONSECURITY, 128, 56. */
const NTLM_FLAGS = (0x1 | 0x4 | 0x200 | 0x800 | 0x8000 | 0x80000 | 0x20000000 | 0x80000000) >>> 0;

interface Smb2Reply {
  status: number;
  command: number;
  sessionId: bigint;
  treeId: number;
  body: Buffer;
}

function smb2(command: number, messageId: number, body: Buffer, sessionId = 0n, treeId = 0): Buffer {
  const header = Buffer.alloc(64);
  header.write("\xfeSMB", 0, "latin1");
  header.writeUInt16LE(64, 4); // structure size
  header.writeUInt16LE(command === COMMAND.negotiate ? 0 : 1, 6); // credit charge
  header.writeUInt16LE(command, 12);
  header.writeUInt16LE(31, 14); // credits requested
  header.writeBigUInt64LE(BigInt(messageId), 24);
  header.writeUInt32LE(0xfeff, 32); // reserved (process id)
  header.writeUInt32LE(treeId, 36);
  header.writeBigUInt64LE(sessionId, 40);
  const message = Buffer.concat([header, body]);
  const transport = Buffer.alloc(4);
  transport.writeUInt32BE(message.length); // first byte 0: a direct-TCP session message
  return Buffer.concat([transport, message]);
}

function negotiateRequest(): Buffer {
  const body = Buffer.alloc(36 + 4);
  body.writeUInt16LE(36, 0);
  body.writeUInt16LE(2, 2); // dialect count
  body.writeUInt16LE(1, 4); // signing enabled
  body.writeUInt16LE(0x0202, 36);
  body.writeUInt16LE(0x0210, 38);
  return body;
}

function sessionSetupRequest(token: Buffer): Buffer {
  const fixed = Buffer.alloc(24);
  fixed.writeUInt16LE(25, 0);
  fixed[3] = 1; // signing enabled
  fixed.writeUInt16LE(64 + 24, 12); // security buffer offset, from the header's start
  fixed.writeUInt16LE(token.length, 14);
  return Buffer.concat([fixed, token]);
}

function ntlmNegotiate(): Buffer {
  const message = Buffer.alloc(32);
  message.write("NTLMSSP\0", 0, "latin1");
  message.writeUInt32LE(1, 8);
  message.writeUInt32LE(NTLM_FLAGS, 12);
  return message;
}

function ntlmAnonymousAuthenticate(): Buffer {
  const fixed = Buffer.alloc(64);
  fixed.write("NTLMSSP\0", 0, "latin1");
  fixed.writeUInt32LE(3, 8);
  const field = (at: number, length: number, offset: number) => {
    fixed.writeUInt16LE(length, at);
    fixed.writeUInt16LE(length, at + 2);
    fixed.writeUInt32LE(offset, at + 4);
  };
  field(12, 1, 64); // LM response: one zero byte
  for (const at of [20, 28, 36, 44, 52]) field(at, 0, 65); // NT response, domain, user, workstation, session key
  fixed.writeUInt32LE(NTLM_FLAGS, 60);
  return Buffer.concat([fixed, Buffer.from([0])]);
}

function treeConnectRequest(path: string): Buffer {
  const name = Buffer.from(path, "utf16le");
  const fixed = Buffer.alloc(8);
  fixed.writeUInt16LE(9, 0);
  fixed.writeUInt16LE(64 + 8, 4);
  fixed.writeUInt16LE(name.length, 6);
  return Buffer.concat([fixed, name]);
}

/** Reads one SMB2 message (direct TCP framing); undefined when what came is not one. */
async function reply(conversation: Conversation): Promise<Smb2Reply | undefined> {
  const bytes = await conversation.read((b) => b.length >= 4 && b.length >= 4 + b.readUIntBE(1, 3));
  if (bytes.length < 4 + 64 || bytes[0] !== 0 || bytes.toString("latin1", 4, 8) !== "\xfeSMB")
    return undefined;
  const message = bytes.subarray(4, 4 + bytes.readUIntBE(1, 3));
  if (message.length < 64) return undefined;
  return {
    status: message.readUInt32LE(8),
    command: message.readUInt16LE(12),
    treeId: message.readUInt32LE(36),
    sessionId: message.readBigUInt64LE(40),
    body: message.subarray(64),
  };
}

export const smbNullSession = check({
  name: "smb_null_session",
  prettyName: "SMB null session allowed",
  severity: 3,
  confidence: "confirmed",
  category: "anonymous_access",
  description:
    "The SMB server accepts an anonymous session (no user name, no password) and lets it connect to the IPC$ share, from where users, groups, shares and password policy are enumerated over RPC.",
  remediation:
    "Refuse anonymous access to IPC$ (Samba: restrict anonymous = 2; Windows: RestrictAnonymous = 1 and RestrictNullSessAccess = 1) and do not expose SMB (445) to the internet.",
  references: [
    {
      type: "description",
      uri: "https://www.samba.org/samba/docs/current/man-html/smb.conf.5.html#RESTRICTANONYMOUS",
    },
    { type: "description", uri: "https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-nlmp/" },
  ],
  services: ["microsoft-ds", "smb", "netbios-ssn"],
  ports: [445],
  async prove(target) {
    const share = `\\\\${target.address}\\IPC$`;
    const said: string[] = [];
    const proven = await talk(
      target,
      async (conversation) => {
        conversation.send(smb2(COMMAND.negotiate, 0, negotiateRequest()));
        const negotiated = await reply(conversation);
        if (negotiated?.command !== COMMAND.negotiate || negotiated.status !== STATUS.success) return false;
        const dialect = negotiated.body.length >= 6 ? negotiated.body.readUInt16LE(4) : 0;
        said.push(
          `NEGOTIATE: dialect ${(dialect >> 8).toString(16)}.${(dialect & 0xff).toString(16).padStart(2, "0")}`,
        );

        conversation.send(smb2(COMMAND.sessionSetup, 1, sessionSetupRequest(ntlmNegotiate())));
        const challenged = await reply(conversation);
        if (challenged?.status !== STATUS.moreProcessing) {
          if (challenged) said.push(`SESSION_SETUP: ${statusName(challenged.status)}`);
          return false;
        }
        const sessionId = challenged.sessionId;
        conversation.send(
          smb2(COMMAND.sessionSetup, 2, sessionSetupRequest(ntlmAnonymousAuthenticate()), sessionId),
        );
        const session = await reply(conversation);
        if (!session) return false;
        const flags = session.body.length >= 4 ? session.body.readUInt16LE(2) : 0;
        said.push(
          `SESSION_SETUP (anonymous): ${statusName(session.status)}${flags & 2 ? ", null session" : flags & 1 ? ", guest session" : ""}`,
        );
        if (session.status !== STATUS.success) return false;

        conversation.send(smb2(COMMAND.treeConnect, 3, treeConnectRequest(share), sessionId));
        const tree = await reply(conversation);
        if (!tree) return false;
        said.push(`TREE_CONNECT ${share}: ${statusName(tree.status)}`);
        conversation.send(smb2(COMMAND.logoff, 4, Buffer.from([4, 0, 0, 0]), sessionId));
        return tree.status === STATUS.success;
      },
      false,
    );
    if (!proven) return undefined;
    return {
      sent: `SMB2 NEGOTIATE (2.0.2, 2.1); SESSION_SETUP with NTLMSSP, anonymous (no user, no domain, no password); TREE_CONNECT ${share}; LOGOFF`,
      received: said.join("; "),
    };
  },
});

export const SMB_CHECKS: readonly ExposureCheck[] = [smbNullSession];
