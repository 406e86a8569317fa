/**
 * The services result: every NetworkService with what identification named (src/core/service-identity.ts)
 * and what the TLS module read, one flat row per service so the CSV export is a plain table.
 */
import { Type } from "typebox";
import { serviceIdentityOf } from "../core/service-identity.ts";
import type { EntityRow } from "../store/result-queries.ts";
import { entityFields, text } from "./common.ts";

export const SERVICE_KINDS = ["NetworkService"];

export const ServiceFields = {
  address: Type.String({ description: "The IP address the service listens on." }),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  protocol: Type.String({ description: '"tcp" or "udp".' }),
  service: Type.String({
    description:
      'The protocol it speaks, as nmap names it ("http", "ssh", "redis", …), named by what it answered; "unknown" when neither its answers nor its port number name it.',
  }),
  product: Type.String({
    description: 'The product it told ("OpenSSH", "Redis key-value store"); empty when not told.',
  }),
  version: Type.String({ description: 'Its version as told ("9.2p1"); empty when not told.' }),
  cpe: Type.String({
    description: "CPE 2.3 name of the product, with its version when known; empty without one.",
  }),
  info: Type.String({ description: 'Other facts it told (a protocol version, "API 1.43").' }),
  tls: Type.Boolean({ description: "It speaks TLS on connect." }),
  tls_protocol: Type.String({ description: 'The TLS version it chose ("TLSv1.3"); empty without TLS.' }),
  tls_cipher: Type.String({ description: "The cipher suite it chose; empty without TLS." }),
  certificate: Type.String({ description: "The name of its certificate entity; empty without TLS." }),
  starttls: Type.Boolean({ description: "It offers an upgrade to TLS (SMTP, IMAP, POP3, FTP)." }),
  banner: Type.String({ description: "What it said first or answered, printable, at most 512 characters." }),
  identified_by: Type.String({
    description:
      'The probe whose answer named it ("greeting", "http-get", "redis-info", …); "port" when only its port number did.',
  }),
};

export function serviceItem(entity: EntityRow) {
  const details = entity.details;
  const identity = serviceIdentityOf(details);
  return {
    ...entityFields(entity),
    address: text(details.ip_address) || (entity.address ?? ""),
    port: Number(details.port ?? entity.port ?? 0),
    protocol: text(details.protocol) || "tcp",
    service: identity.service ?? "unknown",
    product: identity.product ?? "",
    version: identity.version ?? "",
    cpe: identity.cpe ?? "",
    info: identity.info ?? "",
    tls: identity.tls === true,
    tls_protocol: text(details.tls_protocol),
    tls_cipher: text(details.tls_cipher),
    certificate: text(details.certificate),
    starttls: identity.starttls === true,
    banner: identity.banner ?? "",
    identified_by: identity.identified_by ?? "",
  };
}
