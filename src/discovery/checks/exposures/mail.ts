/**
 * SMTP: an open relay (RCPT for a foreign domain accepted from a foreign sender — then RSET and QUIT,
 * never DATA, so nothing is ever sent) and user enumeration by VRFY/EXPN (a known mailbox confirmed
 * where a made-up one is refused, so a server that says 252 to everything proves nothing).
 */
import type { Conversation } from "../../net/conversation.ts";
import { check, type ExposureCheck, excerpt, talk } from "./check.ts";

/** One SMTP reply: lines until "NNN " (continuations are "NNN-"). */
function reply(conversation: Conversation): Promise<string> {
  return conversation
    .read((bytes) => /(^|\n)\d{3}( [^\n]*)?\r?\n/.test(bytes.toString("latin1")))
    .then((bytes) => bytes.toString("latin1"));
}

const code = (text: string) => Number(/(?:^|\n)(\d{3})(?: [^\n]*)?\r?\n/.exec(text)?.[1] ?? 0);

interface Transcript {
  lines: string[];
  ask(conversation: Conversation, command: string): Promise<number>;
}

function transcript(): Transcript {
  const lines: string[] = [];
  return {
    lines,
    async ask(conversation, command) {
      conversation.send(`${command}\r\n`);
      const answer = await reply(conversation);
      lines.push(
        `> ${command}`,
        ...answer
          .trimEnd()
          .split(/\r?\n/)
          .map((line) => `< ${line}`),
      );
      return code(answer);
    },
  };
}

async function greet(conversation: Conversation, said: Transcript): Promise<boolean> {
  const greeting = await reply(conversation);
  said.lines.push(
    ...greeting
      .trimEnd()
      .split(/\r?\n/)
      .map((line) => `< ${line}`),
  );
  if (code(greeting) !== 220) return false;
  const ehlo = await said.ask(conversation, "EHLO sightline.invalid");
  return ehlo === 250 || (await said.ask(conversation, "HELO sightline.invalid")) === 250;
}

const SMTP = { services: ["smtp", "submission", "smtps"], ports: [25, 587, 465] };

export const smtpOpenRelay = check({
  name: "smtp_open_relay",
  prettyName: "SMTP open relay",
  severity: 2,
  confidence: "confirmed",
  category: "misconfiguration",
  description:
    "The mail server accepted a recipient in a domain it does not serve, from a sender in another foreign domain, without authentication: spammers can send mail through it, and it will end up on block lists.",
  remediation:
    "Relay only for authenticated clients and your own networks (Postfix: smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination; mynetworks limited to your hosts).",
  references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc5321#section-3.9" }],
  ...SMTP,
  async prove(target) {
    const said = transcript();
    const relayed = await talk(target, async (conversation) => {
      if (!(await greet(conversation, said))) return false;
      if ((await said.ask(conversation, "MAIL FROM:<sightline-probe@example.com>")) !== 250) return false;
      const accepted = [250, 251].includes(
        await said.ask(conversation, "RCPT TO:<sightline-probe@example.net>"),
      );
      await said.ask(conversation, "RSET");
      conversation.send("QUIT\r\n");
      return accepted;
    });
    if (!relayed) return undefined;
    return {
      sent: "EHLO sightline.invalid\nMAIL FROM:<sightline-probe@example.com>\nRCPT TO:<sightline-probe@example.net>\nRSET\nQUIT",
      received: excerpt(said.lines.join("\n"), 600),
    };
  },
});

export const smtpUserEnumeration = check({
  name: "smtp_user_enumeration",
  prettyName: "SMTP VRFY/EXPN reveal mailboxes",
  severity: 4,
  confidence: "confirmed",
  category: "information_disclosure",
  description:
    "The mail server confirms which mailboxes exist through VRFY or EXPN (a real one accepted, a made-up one refused), so user names can be harvested for phishing and password guessing.",
  remediation:
    "Disable VRFY and EXPN (Postfix: disable_vrfy_command = yes; Sendmail: PrivacyOptions=goaway).",
  references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc5321#section-7.3" }],
  ...SMTP,
  async prove(target) {
    const said = transcript();
    const made = `sightline-nobody-${Math.random().toString(36).slice(2, 10)}`;
    const command = await talk(target, async (conversation) => {
      if (!(await greet(conversation, said))) return undefined;
      for (const verb of ["VRFY", "EXPN"]) {
        for (const mailbox of ["postmaster", "root"]) {
          const known = await said.ask(conversation, `${verb} ${mailbox}`);
          if (known < 250 || known > 252) continue;
          const unknown = await said.ask(conversation, `${verb} ${made}`);
          if (unknown >= 550 && unknown <= 553) {
            conversation.send("QUIT\r\n");
            return `${verb} ${mailbox}`;
          }
          break;
        }
      }
      conversation.send("QUIT\r\n");
      return undefined;
    });
    if (!command) return undefined;
    return {
      sent: `EHLO sightline.invalid\n${command}\n${command.split(" ")[0]} ${made}\nQUIT`,
      received: excerpt(said.lines.join("\n"), 600),
      command: command.split(" ")[0],
    };
  },
});

export const MAIL_CHECKS: readonly ExposureCheck[] = [smtpOpenRelay, smtpUserEnumeration];
