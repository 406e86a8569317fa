/**
 * LDAP anonymous read: an anonymous simple bind, the root DSE's naming contexts, then a search of at
 * most five entries under the first context. The root DSE is public on most servers by design; only
 * entries read from the directory itself prove the exposure. BER is written and read by hand (the
 * few shapes needed), every length checked against what arrived.
 */
import { children, enumerated, integer, octets, type Tlv, tlv } from "../../net/ber.ts";
import type { Conversation } from "../../net/conversation.ts";
import { check, type ExposureCheck, excerpt, talk } from "./check.ts";

const message = (id: number, op: Buffer) => tlv(0x30, integer(id), op);

const anonymousBind = (id: number) => message(id, tlv(0x60, integer(3), octets(""), tlv(0x80)));

function search(id: number, base: string, scope: 0 | 2, sizeLimit: number, attributes: string[]) {
  return message(
    id,
    tlv(
      0x63,
      octets(base),
      enumerated(scope),
      enumerated(0),
      integer(sizeLimit),
      integer(5),
      tlv(0x01, Buffer.from([0])),
      tlv(0x87, Buffer.from("objectClass")),
      tlv(0x30, ...attributes.map(octets)),
    ),
  );
}

interface LdapOp {
  tag: number;
  parts: Tlv[];
}

/** The protocol operations of the whole LDAP messages in `bytes`. */
function operations(bytes: Buffer): LdapOp[] {
  return children(bytes)
    .filter((element) => element.tag === 0x30)
    .map((element) => children(element.value)[1])
    .filter((op): op is Tlv => op !== undefined)
    .map((op) => ({ tag: op.tag, parts: children(op.value) }));
}

const resultCode = (op: LdapOp | undefined) => op?.parts[0]?.value[0];

/** Reads until the operation `doneTag` arrives (or the conversation ends). */
function readUntilOp(conversation: Conversation, doneTag: number): Promise<Buffer> {
  return conversation.read((bytes) => operations(bytes).some((op) => op.tag === doneTag));
}

/** The values of one attribute of a SearchResultEntry. */
function attributeValues(entry: LdapOp, name: string): string[] {
  const attributes = entry.parts[1] ? children(entry.parts[1].value) : [];
  for (const attribute of attributes) {
    const [type, values] = children(attribute.value);
    if (type?.value.toString("utf8").toLowerCase() === name.toLowerCase() && values)
      return children(values.value).map((value) => value.value.toString("utf8"));
  }
  return [];
}

export const ldapAnonymousRead = check({
  name: "ldap_anonymous_read",
  prettyName: "LDAP directory readable anonymously",
  severity: 3,
  confidence: "confirmed",
  category: "anonymous_access",
  description:
    "The LDAP server accepts an anonymous bind and returns directory entries to it: user names, groups, e-mail addresses and sometimes password hashes are readable by anyone.",
  remediation:
    "Refuse anonymous reads of the directory (OpenLDAP: olcAccess `by anonymous auth`, or olcDisallows bind_anon; Active Directory: keep dsHeuristics from granting anonymous access) and expose LDAP only to clients that need it.",
  references: [{ type: "description", uri: "https://www.openldap.org/doc/admin26/access-control.html" }],
  services: ["ldap"],
  ports: [389],
  async prove(target) {
    const found = await talk(target, async (conversation) => {
      conversation.send(anonymousBind(1));
      const bind = operations(await readUntilOp(conversation, 0x61)).find((op) => op.tag === 0x61);
      if (resultCode(bind) !== 0) return undefined;
      conversation.send(search(2, "", 0, 1, ["namingContexts"]));
      const root = operations(await readUntilOp(conversation, 0x65));
      const contexts = root
        .filter((op) => op.tag === 0x64)
        .flatMap((op) => attributeValues(op, "namingContexts"));
      const base = contexts.find((context) => context !== "");
      if (!base) return undefined;
      conversation.send(search(3, base, 2, 5, ["1.1"]));
      const entries = operations(await readUntilOp(conversation, 0x65))
        .filter((op) => op.tag === 0x64)
        .map((op) => op.parts[0]?.value.toString("utf8") ?? "");
      conversation.send(message(4, tlv(0x42))); // unbind
      return entries.length > 0 ? { base, entries } : undefined;
    });
    if (!found) return undefined;
    return {
      sent: `bind (simple, anonymous); search base "" scope base (namingContexts); search base "${found.base}" subtree, size limit 5, no attributes; unbind`,
      received: excerpt(`naming context ${found.base}; entries: ${found.entries.join("; ")}`),
      naming_context: found.base,
      entries: found.entries,
    };
  },
});

export const LDAP_CHECKS: readonly ExposureCheck[] = [ldapAnonymousRead];
