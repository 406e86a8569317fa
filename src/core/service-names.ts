/** How a network service is named: address, port and transport, as the spec's NetworkService names read. */
import { isIPv6 } from "node:net";

/** The entity name of a TCP service: "1.2.3.4:22/tcp", "[2001:db8::1]:443/tcp". */
export function serviceName(address: string, port: number): string {
  return `${endpointName(address, port)}/tcp`;
}

/** Where a service listens, whatever its transport: "1.2.3.4:443", "[2001:db8::1]:443". */
export const endpointName = (address: string, port: number) => `${servicePrefix(address)}${port}`;

/** What the names of an address's services start with: "1.2.3.4:", "[2001:db8::1]:". */
export const servicePrefix = (address: string) => `${isIPv6(address) ? `[${address}]` : address}:`;

/** The address and port a TCP service name stands for. */
export function parseServiceName(name: string): { address: string; port: number } | undefined {
  const match = /^\[?([^\]]+?)\]?:(\d+)\/tcp$/.exec(name);
  return match ? { address: match[1], port: Number(match[2]) } : undefined;
}

/**
 * Where a network service listens: its details' `ip_address` and `port` as the port scan recorded them,
 * else what its name says. The one way every module and view finds a service's address.
 */
export function serviceEndpoint(service: {
  name: string;
  details?: Record<string, unknown>;
}): { address: string; port: number } | undefined {
  const parsed = parseServiceName(service.name);
  const details = service.details ?? {};
  const address =
    typeof details.ip_address === "string" && details.ip_address ? details.ip_address : parsed?.address;
  const port = details.port !== undefined && details.port !== "" ? Number(details.port) : parsed?.port;
  return address && port !== undefined && Number.isInteger(port) ? { address, port } : undefined;
}
