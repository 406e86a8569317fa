/** IP addresses as 128-bit-safe integers, and the CIDR arithmetic netblocks and seed blocks need. */
import ipaddr from "ipaddr.js";

export function addressToBigInt(address: string): bigint {
  return ipaddr
    .parse(address)
    .toByteArray()
    .reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
}

/** `bits` is 32 for IPv4, 128 for IPv6. */
export function bigIntToAddress(value: bigint, bits: number): string {
  const bytes: number[] = [];
  for (let i = bits / 8 - 1; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

/** The largest CIDR block inside [start, end] that holds `value`. */
export function blockWithin(start: bigint, end: bigint, value: bigint, bits: number): string {
  let cursor = start;
  while (cursor <= end) {
    let size = 0;
    // Grow the block while it stays aligned and inside the range.
    while (
      size < bits &&
      (cursor & ((1n << BigInt(size + 1)) - 1n)) === 0n &&
      cursor + (1n << BigInt(size + 1)) - 1n <= end
    )
      size++;
    const last = cursor + (1n << BigInt(size)) - 1n;
    if (value >= cursor && value <= last) return `${bigIntToAddress(cursor, bits)}/${bits - size}`;
    cursor = last + 1n;
  }
  return `${bigIntToAddress(value, bits)}/${bits}`;
}

/** Every address of a CIDR block, or undefined when it holds more than `limit` addresses. */
export function blockAddresses(cidr: string, limit: number): string[] | undefined {
  const [base, prefix] = cidr.split("/");
  const bits = base.includes(":") ? 128 : 32;
  const hostBits = bits - Number(prefix);
  if (2 ** hostBits > limit) return undefined;
  const start = addressToBigInt(base);
  return Array.from({ length: 2 ** hostBits }, (_, i) => bigIntToAddress(start + BigInt(i), bits));
}

/** How many addresses a CIDR block holds (at most 2^53: an IPv6 block's size is capped there). */
export function blockSize(cidr: string): number {
  const [base, prefix] = cidr.split("/");
  const bits = base.includes(":") ? 128 : 32;
  return 2 ** Math.min(bits - Number(prefix), 53);
}

/** `count` addresses of a CIDR block from its `start`-th one. */
export function blockSlice(cidr: string, start: number, count: number): string[] {
  const [base] = cidr.split("/");
  const bits = base.includes(":") ? 128 : 32;
  const first = addressToBigInt(base) + BigInt(start);
  return Array.from({ length: count }, (_, i) => bigIntToAddress(first + BigInt(i), bits));
}
