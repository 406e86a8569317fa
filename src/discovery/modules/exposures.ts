/**
 * Exposure checks on every NetworkService (TCP and UDP): the checks that apply to the service — by
 * the name identification gave it (`details.service`, nmap's names), or by its port while a service
 * is still named by its port — each prove an exposure with one read-only exchange, inside scope and
 * through the throttle, and raise an issue carrying the proof. The checks are in
 * src/discovery/checks/exposures/, one file per protocol family.
 */

import type { EntityRef, FoundEntity } from "../../core/entities.ts";
import type { ExposureCheck, ExposureTarget } from "../checks/exposures/check.ts";
import { DATASTORE_CHECKS } from "../checks/exposures/datastores.ts";
import { FILE_AND_MESSAGING_CHECKS } from "../checks/exposures/files-and-messaging.ts";
import { HTTP_API_CHECKS } from "../checks/exposures/http-apis.ts";
import { LDAP_CHECKS } from "../checks/exposures/ldap.ts";
import { MAIL_CHECKS } from "../checks/exposures/mail.ts";
import { PROXY_CHECKS } from "../checks/exposures/proxy.ts";
import { REMOTE_AND_DATABASE_CHECKS } from "../checks/exposures/remote-and-databases.ts";
import { RPC_CHECKS } from "../checks/exposures/rpc.ts";
import { SMB_CHECKS } from "../checks/exposures/smb.ts";
import { SNMP_CHECKS } from "../checks/exposures/snmp.ts";
import type { DiscoveryModule } from "../module.ts";

export const EXPOSURE_CHECKS: readonly ExposureCheck[] = [
  ...DATASTORE_CHECKS,
  ...HTTP_API_CHECKS,
  ...FILE_AND_MESSAGING_CHECKS,
  ...LDAP_CHECKS,
  ...MAIL_CHECKS,
  ...PROXY_CHECKS,
  ...REMOTE_AND_DATABASE_CHECKS,
  ...SMB_CHECKS,
  ...RPC_CHECKS,
  ...SNMP_CHECKS,
];

/** Ports whose services speak TLS from the first byte (unless identification said otherwise). */
const IMPLICIT_TLS = new Set([443, 465, 636, 993, 995, 2376, 5986, 6443, 8443, 8883, 9443, 10250]);

/** Most bytes read from a service in one check's conversation. */
const MAX_CHECK_BYTES = 64 * 1024;

interface ServiceFacts {
  address: string;
  port: number;
  protocol: "tcp" | "udp";
  service: string;
  tls: boolean;
}

export function serviceFacts(entity: FoundEntity): ServiceFacts | undefined {
  const details = entity.details ?? {};
  const named = /^\[?([^\]]+?)\]?:(\d+)\/(tcp|udp)$/.exec(entity.name);
  const address = String(details.ip_address ?? named?.[1] ?? "");
  const port = Number(details.port ?? named?.[2]);
  const protocol = (details.protocol ?? named?.[3] ?? "tcp") === "udp" ? "udp" : "tcp";
  if (!address || !Number.isInteger(port) || port <= 0) return undefined;
  return {
    address,
    port,
    protocol,
    service: String(details.service ?? "unknown").toLowerCase(),
    tls: details.tls === true || IMPLICIT_TLS.has(port),
  };
}

/** The checks that apply to a service: by its name, or by its port. */
export function checksFor(facts: ServiceFacts, checks: readonly ExposureCheck[] = EXPOSURE_CHECKS) {
  return checks.filter(
    (candidate) =>
      (candidate.transport ?? "tcp") === facts.protocol &&
      (candidate.services.includes(facts.service) || candidate.ports?.includes(facts.port)),
  );
}

export function createExposureModule(checks: readonly ExposureCheck[] = EXPOSURE_CHECKS): DiscoveryModule {
  return {
    name: "exposures",
    consumes: ["NetworkService"],
    produces: [],
    // Checks are conversations: one still running after a moment waits on the service.
    waits: true,
    wants(entity) {
      const facts = serviceFacts(entity);
      return facts !== undefined && checksFor(facts, checks).length > 0;
    },
    async run(entity, ctx) {
      const facts = serviceFacts(entity);
      if (!facts || !ctx.mayTouch(facts.address)) return;
      const target: ExposureTarget = {
        ...facts,
        timeoutMs: ctx.settings.timeoutMs,
        maxBytes: MAX_CHECK_BYTES,
        signal: ctx.signal,
        mayTouch: ctx.mayTouch,
      };
      const service: EntityRef = { kind: "NetworkService", name: entity.name };
      for (const candidate of checksFor(facts, checks)) {
        if (ctx.signal.aborted) return;
        let proof: Awaited<ReturnType<ExposureCheck["prove"]>>;
        try {
          proof = await ctx.throttle.run(facts.address, () => candidate.prove(target), ctx.signal);
        } catch (error) {
          if (ctx.signal.aborted) return;
          ctx.note(`The ${candidate.name} check on ${entity.name} failed: ${(error as Error).message}`);
          continue;
        }
        if (!proof) continue;
        const {
          services: _services,
          ports: _ports,
          transport: _transport,
          prove: _prove,
          ...template
        } = candidate;
        ctx.raise({
          ...template,
          entity: service,
          details: { ...proof, port: String(facts.port), protocol: facts.protocol },
        });
      }
    },
  };
}

export const exposureChecks = createExposureModule();
