/**
 * Zone-transfer attempts: an AXFR over TCP to each name server of a domain (RFC 5936). An open
 * transfer is raised as an issue and every name and address of the zone becomes an entity; a refusal
 * is the expected answer and is recorded on the domain.
 */
import { randomInt } from "node:crypto";
import { connect } from "node:net";
import dnsPacket, { type Answer } from "dns-packet";
import type { EntityRef, FoundEntity } from "../../core/entities.ts";
import { issue } from "../findings.ts";
import type { DiscoveryModule } from "../module.ts";
import { canonicalName, DnsClient } from "../net/dns-client.ts";

export type TransferOutcome =
  /** `truncated`: the zone had more records than `maxRecords`; the first ones are kept. */
  | { ok: true; records: Answer[]; truncated?: boolean }
  | { ok: false; reason: "refused" | "timeout" | "unreachable" | "malformed"; detail: string };

/**
 * One AXFR of `zone` from `host:port`: every record, SOA first and last, or why not. A server that never
 * ends the transfer is cut at `maxRecords` records (and by the time bound).
 */
export function transferZone(
  host: string,
  port: number,
  zone: string,
  options: { timeoutMs: number; signal: AbortSignal; maxRecords: number },
): Promise<TransferOutcome> {
  return new Promise((resolve) => {
    const records: Answer[] = [];
    let soaSeen = 0;
    // Bytes are joined only once a whole message is there: a server trickling bytes costs no copying.
    let pending = Buffer.alloc(0);
    const parts: Buffer[] = [];
    let buffered = 0;
    /** The length of the message being read, once its 2-byte prefix is there. */
    let length: number | undefined;
    const socket = connect({ host, port });
    let finished = false;
    const done = (outcome: TransferOutcome) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(outcome);
    };
    // The bound covers the whole transfer: a server that trickles answers is cut off too.
    const timer = setTimeout(
      () =>
        done({ ok: false, reason: "timeout", detail: `no complete answer within ${options.timeoutMs} ms` }),
      options.timeoutMs,
    );
    const onAbort = () => done({ ok: false, reason: "timeout", detail: "cancelled" });
    options.signal.addEventListener("abort", onAbort, { once: true });
    socket.on("error", (error) => done({ ok: false, reason: "unreachable", detail: error.message }));
    socket.on("close", () =>
      done({ ok: false, reason: "malformed", detail: "connection closed mid-transfer" }),
    );
    socket.on("connect", () => {
      socket.write(
        dnsPacket.streamEncode({
          type: "query",
          id: randomInt(65536),
          questions: [{ type: "AXFR", name: zone }],
        }),
      );
    });
    socket.on("data", (chunk: Buffer) => {
      parts.push(chunk);
      buffered += chunk.length;
      while (buffered >= 2 + (length ?? 0)) {
        if (parts.length > 0) pending = Buffer.concat([pending, ...parts.splice(0)]);
        if (length === undefined) {
          length = pending.readUInt16BE(0);
          continue;
        }
        const framed = pending.subarray(2, 2 + length);
        pending = pending.subarray(2 + length);
        buffered -= 2 + length;
        length = undefined;
        let message: ReturnType<typeof dnsPacket.decode>;
        try {
          message = dnsPacket.decode(framed);
        } catch (error) {
          return done({ ok: false, reason: "malformed", detail: (error as Error).message });
        }
        const rcode = (message as { rcode?: string }).rcode ?? "NOERROR";
        if (rcode !== "NOERROR") return done({ ok: false, reason: "refused", detail: rcode });
        if (!message.answers?.length && records.length === 0)
          return done({ ok: false, reason: "refused", detail: "empty answer" });
        for (const record of message.answers ?? []) {
          if (records.length >= options.maxRecords) return done({ ok: true, records, truncated: true });
          records.push(record);
          if (record.type === "SOA" && ++soaSeen === 2)
            return done({ ok: true, records: records.slice(0, -1) });
        }
      }
    });
  });
}

export const zoneTransfer: DiscoveryModule = {
  name: "dns-axfr",
  consumes: ["Domain"],
  produces: ["DnsRecord", "IpAddress"],
  async run(entity, ctx) {
    const dns = new DnsClient(ctx);
    const zone = entity.name;
    const self: EntityRef = { kind: entity.kind, name: zone };
    const servers = await dns.ns(zone);
    if (!servers.ok) {
      if (servers.code === "timeout")
        ctx.note(
          `The name servers of ${zone} could not be listed (DNS timeout); no zone transfer was tried.`,
        );
      return;
    }
    const attempts: Array<{ server: string; address: string; result: string }> = [];
    for (const server of servers.value.map(canonicalName).sort()) {
      const { addresses } = await dns.addresses(server);
      for (const address of addresses) {
        if (!ctx.mayTouch(address)) {
          attempts.push({ server, address, result: "not tried (deny list)" });
          continue;
        }
        const outcome = await ctx.throttle.run(
          address,
          () =>
            transferZone(address, 53, zone, {
              timeoutMs: ctx.settings.timeoutMs * 2,
              signal: ctx.signal,
              maxRecords: ctx.settings.limits.axfrMaxRecords,
            }),
          ctx.signal,
        );
        if (!outcome.ok) {
          attempts.push({ server, address, result: `${outcome.reason}: ${outcome.detail}` });
          if (outcome.reason === "timeout" && outcome.detail !== "cancelled")
            ctx.note(`Zone transfer of ${zone} from ${server} (${address}) timed out.`);
          continue;
        }
        attempts.push({ server, address, result: `transferred ${outcome.records.length} records` });
        if (outcome.truncated)
          ctx.note(
            `The zone transfer of ${zone} from ${server} (${address}) was stopped after ${outcome.records.length} records (SIGHTLINE_AXFR_MAX_RECORDS); the rest of the zone was not read.`,
          );
        ctx.raise(issue("zoneTransfer", self, { zone, server, address, records: outcome.records.length }));
        emitZone(zone, outcome.records, ctx.emit);
        ctx.emit({ kind: entity.kind, name: zone, details: { zone_transfer: { open: true, attempts } } });
        return;
      }
    }
    ctx.emit({ kind: entity.kind, name: zone, details: { zone_transfer: { open: false, attempts } } });
  },
};

/** Every owner name of a transferred zone, and the addresses its A/AAAA records give. */
function emitZone(zone: string, records: Answer[], emit: (entity: FoundEntity) => void) {
  for (const record of records) {
    const owner = canonicalName(record.name);
    if (owner.startsWith("*.")) continue;
    const ref: EntityRef =
      owner === zone ? { kind: "Domain", name: zone } : { kind: "DnsRecord", name: owner };
    if (owner !== zone) emit({ ...ref, details: { source: "zone transfer" } });
    if (record.type === "A" || record.type === "AAAA") {
      emit({
        kind: "IpAddress",
        name: String(record.data),
        details: { resolutions: [owner] },
        aliases: [ref],
      });
    }
  }
}
