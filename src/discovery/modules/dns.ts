/**
 * DNS records of a name: addresses (A/AAAA, CNAMEs followed), aliases, mail exchangers, name servers,
 * TXT, SOA, CAA and SRV. Emits the addresses and every name the records point at; for a domain also
 * reads its mail policy (SPF followed through its includes, DMARC), CAA and the well-known SRV
 * services, and raises what is missing or broken.
 * A name that does not resolve is a note when it was a seed, never a failure.
 */

import type { EntityRef, FoundEntity } from "../../core/entities.ts";
import { issue } from "../findings.ts";
import type { DiscoveryContext, DiscoveryModule } from "../module.ts";
import { type CaaRecord, canonicalName, DnsClient, type DnsOutcome } from "../net/dns-client.ts";
import { followSpf, spfRecord } from "../spf.ts";

/** SRV names worth asking a domain for (RFC 2782 services an attack surface commonly publishes). */
export const WELL_KNOWN_SRV = [
  "_sip._tcp",
  "_sip._udp",
  "_sips._tcp",
  "_xmpp-client._tcp",
  "_xmpp-server._tcp",
  "_autodiscover._tcp",
  "_ldap._tcp",
  "_kerberos._tcp",
  "_caldav._tcp",
  "_carddav._tcp",
  "_imaps._tcp",
  "_submission._tcp",
  "_matrix._tcp",
  "_minecraft._tcp",
];

const values = <T>(outcome: DnsOutcome<T[]>): T[] => (outcome.ok ? outcome.value : []);

/**
 * A record set in one order: servers and resolvers rotate their answers (round-robin addresses, name
 * servers), and a set has no order, so an unchanged name reads the same in every run.
 */
const recordSet = (items: string[]): string[] => [...items].sort();

export const dnsRecords: DiscoveryModule = {
  name: "dns",
  consumes: ["Domain", "DnsRecord", "Nameserver"],
  produces: ["IpAddress", "DnsRecord", "Nameserver"],
  async run(entity, ctx) {
    const dns = new DnsClient(ctx);
    const name = entity.name;
    const self: EntityRef = { kind: entity.kind, name };
    const [a, aaaa, cname, mx, ns, txt, soa, caa] = await Promise.all([
      dns.a(name),
      dns.aaaa(name),
      dns.cname(name),
      dns.mx(name),
      dns.ns(name),
      dns.txt(name),
      dns.soa(name),
      dns.caa(name),
    ]);
    const srv = name.split(".").some((label) => label.startsWith("_")) ? await dns.srv(name) : undefined;
    const outcomes = [a, aaaa, cname, mx, ns, txt, soa, caa];

    if (outcomes.every((o) => !o.ok && o.code === "cancelled")) return;
    if (outcomes.every((o) => !o.ok && (o.code === "timeout" || o.code === "error"))) {
      ctx.note(`No DNS server answered for ${name} (timed out or failed); its records are unknown.`);
      return;
    }
    const cnameTarget = cname.ok ? canonicalName(cname.value[0]) : undefined;
    const exists = outcomes.some((o) => o.ok || o.code === "nodata") || cnameTarget !== undefined;
    if (!exists) {
      if (ctx.depth === 0) ctx.note(`Seed ${name} does not resolve (no such name in DNS).`);
      return;
    }

    const dropped = (
      [
        ["A", a],
        ["AAAA", aaaa],
        ["MX", mx],
        ["NS", ns],
        ["TXT", txt],
        ["CAA", caa],
      ] as const
    ).filter(([, outcome]) => outcome.ok && outcome.dropped);
    if (dropped.length > 0) {
      const most = ctx.settings.limits.dnsMaxRecords;
      const counts = dropped.map(([type, o]) => `${type} (${o.ok ? o.dropped : 0} more)`).join(", ");
      ctx.note(
        `${name} answered more than ${most} records of a type; only the first ${most} were kept (SIGHTLINE_DNS_MAX_RECORDS): ${counts}.`,
      );
    }

    const addresses = [...values(a), ...values(aaaa)];
    for (const address of addresses) {
      ctx.emit({ kind: "IpAddress", name: address, details: { resolutions: [name] }, aliases: [self] });
    }

    if (cnameTarget) {
      if (addresses.length === 0 && (await dns.addresses(cnameTarget)).failure === "nxdomain") {
        ctx.raise(issue("danglingCname", self, { name, target: cnameTarget }));
      } else {
        ctx.emit({ kind: "DnsRecord", name: cnameTarget });
      }
    }
    for (const exchange of values(mx))
      ctx.emit({ kind: "DnsRecord", name: canonicalName(exchange.exchange) });
    for (const server of values(ns)) ctx.emit({ kind: "Nameserver", name: canonicalName(server) });
    if (soa.ok) ctx.emit({ kind: "Nameserver", name: canonicalName(soa.value.nsname) });
    for (const record of srv?.ok ? srv.value : []) {
      if (record.name !== "" && record.name !== ".")
        ctx.emit({ kind: "DnsRecord", name: canonicalName(record.name) });
    }

    const records: Record<string, unknown[]> = {
      a: recordSet(values(a)),
      aaaa: recordSet(values(aaaa)),
      cname: cnameTarget ? [cnameTarget] : [],
      mx: recordSet(values(mx).map((m) => `${m.priority} ${canonicalName(m.exchange)}`)),
      ns: recordSet(values(ns).map(canonicalName)),
      txt: recordSet(values(txt)),
      soa: soa.ok ? [`${canonicalName(soa.value.nsname)} ${soa.value.hostmaster} ${soa.value.serial}`] : [],
      caa: recordSet(values(caa).map(formatCaa)),
      srv: recordSet(
        srv?.ok ? srv.value.map((s) => `${s.priority} ${s.weight} ${s.port} ${canonicalName(s.name)}`) : [],
      ),
    };
    const details: Record<string, unknown> = { resolves: true, records, addresses: recordSet(addresses) };
    if (entity.kind === "Domain") Object.assign(details, await domainPolicies(dns, entity, records, ctx));
    ctx.emit({ kind: entity.kind, name, details });
  },
};

function formatCaa(record: CaaRecord): string {
  const [tag, value] = Object.entries(record).find(([key]) => key !== "critical") ?? ["", ""];
  return `${record.critical} ${tag} "${value}"`;
}

/** SPF, DMARC, CAA and well-known SRV services of a domain; raises what is missing or weak. */
async function domainPolicies(
  dns: DnsClient,
  domain: FoundEntity,
  records: Record<string, unknown[]>,
  ctx: DiscoveryContext,
): Promise<Record<string, unknown>> {
  const self: EntityRef = { kind: domain.kind, name: domain.name };
  const spf = (records.txt as string[]).find((text) => /^v=spf1(\s|$)/i.test(text)) ?? "";
  // The organisations allowed to send its mail: the connections result lists them (kind `spf`).
  const record = spfRecord(records.txt as string[]);
  const spfTree = record
    ? await followSpf(domain.name, record, async (name) => {
        const answer = await dns.txt(name);
        return answer.ok
          ? answer.value
          : answer.code === "nodata" || answer.code === "nxdomain"
            ? []
            : undefined;
      })
    : undefined;
  if (spfTree && spfTree.errors.length > 0)
    ctx.raise(
      issue("brokenSpf", self, {
        domain: domain.name,
        spf,
        includes: spfTree.includes,
        lookups: spfTree.lookups,
        errors: spfTree.errors,
      }),
    );
  const dmarcName = `_dmarc.${domain.name}`;
  const dmarcAnswer = await dns.txt(dmarcName);
  const dmarc = (dmarcAnswer.ok ? dmarcAnswer.value : []).find((text) => /^v=DMARC1/i.test(text)) ?? "";
  if (dmarc) ctx.emit({ kind: "DnsRecord", name: dmarcName, details: { records: { txt: [dmarc] } } });

  if (!spf) ctx.raise(issue("missingSpf", self, { domain: domain.name, txt: records.txt }));
  if (!dmarc) ctx.raise(issue("missingDmarc", self, { domain: domain.name, queried: dmarcName }));
  else if (/(^|;)\s*p\s*=\s*none\s*(;|$)/i.test(dmarc))
    ctx.raise(issue("weakDmarc", self, { domain: domain.name, dmarc }));
  if (records.caa.length === 0) ctx.raise(issue("missingCaa", self, { domain: domain.name }));

  const services: string[] = [];
  await Promise.all(
    WELL_KNOWN_SRV.map(async (prefix) => {
      const owner = `${prefix}.${domain.name}`;
      const answer = await dns.srv(owner);
      if (!answer.ok) return;
      services.push(owner);
      ctx.emit({
        kind: "DnsRecord",
        name: owner,
        details: {
          records: { srv: answer.value.map((s) => `${s.priority} ${s.weight} ${s.port} ${s.name}`) },
        },
      });
      for (const record of answer.value) ctx.emit({ kind: "DnsRecord", name: canonicalName(record.name) });
    }),
  );
  const followed = spfTree ? { spf_includes: spfTree.includes, spf_lookups: spfTree.lookups } : {};
  return { spf, ...followed, dmarc, caa: records.caa, srv_services: services.sort() };
}
