/**
 * Writes MMDB files (MaxMind DB File Format 2.0, https://maxmind.github.io/MaxMind-DB/) for tests: an
 * IPv6 search tree (IPv4 networks under ::/96, as MaxMind's own databases hold them) with 32-bit
 * records, a data section of maps, strings and unsigned integers, and the metadata. GeoLite2 and DB-IP
 * files cannot be fetched here, so tests write files in their layouts and the real reader (mmdb-lib)
 * reads them; no npm package writes MMDB.
 */
import ipaddr from "ipaddr.js";

export type MmdbValue = string | number | boolean | MmdbValue[] | { [key: string]: MmdbValue };

function control(type: number, size: number): Buffer {
  const extended = type > 7;
  const head = (extended ? 0 : type) << 5;
  let sizeBytes: number[] = [];
  let sizeBits: number;
  if (size < 29) sizeBits = size;
  else if (size < 29 + 256) {
    sizeBits = 29;
    sizeBytes = [size - 29];
  } else if (size < 285 + 65536) {
    sizeBits = 30;
    const rest = size - 285;
    sizeBytes = [rest >> 8, rest & 255];
  } else {
    sizeBits = 31;
    const rest = size - 65821;
    sizeBytes = [(rest >> 16) & 255, (rest >> 8) & 255, rest & 255];
  }
  return Buffer.from([head | sizeBits, ...(extended ? [type - 7] : []), ...sizeBytes]);
}

function unsigned(type: number, value: number | bigint): Buffer {
  let big = BigInt(value);
  const bytes: number[] = [];
  while (big > 0n) {
    bytes.unshift(Number(big & 255n));
    big >>= 8n;
  }
  return Buffer.concat([control(type, bytes.length), Buffer.from(bytes)]);
}

/** One value in the data section's encoding. */
export function encode(value: MmdbValue): Buffer {
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    return Buffer.concat([control(2, bytes.length), bytes]);
  }
  if (typeof value === "boolean") return control(14, value ? 1 : 0);
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 0) throw new Error("only unsigned integers are written");
    return unsigned(value < 65536 ? 5 : 6, value);
  }
  if (Array.isArray(value)) return Buffer.concat([control(11, value.length), ...value.map(encode)]);
  const entries = Object.entries(value);
  return Buffer.concat([control(7, entries.length), ...entries.flatMap(([k, v]) => [encode(k), encode(v)])]);
}

/** The 128 bits of a network's address (IPv4 under ::/96) and its prefix length in that tree. */
function bitsOf(cidr: string): { bits: number[]; prefix: number } {
  const [address, length] = ipaddr.parseCIDR(cidr);
  const bytes =
    address.kind() === "ipv4" ? [...new Array(12).fill(0), ...address.toByteArray()] : address.toByteArray();
  const bits = bytes.flatMap((byte) => Array.from({ length: 8 }, (_, i) => (byte >> (7 - i)) & 1));
  return { bits, prefix: address.kind() === "ipv4" ? 96 + length : length };
}

/**
 * An MMDB file holding `networks` (CIDR → record; networks must not overlap), with the database type
 * and description given.
 */
export function writeMmdb(
  networks: Record<string, MmdbValue>,
  options: { databaseType: string; description?: string; buildEpoch?: number },
): Buffer {
  // Each node's two records in typed arrays (a benchmark writes millions): EMPTY, a node's index, or
  // DATA - i for the i-th distinct record.
  const EMPTY = -1;
  const DATA = -2;
  let records = new Int32Array(2 * 1024).fill(EMPTY);
  let nodeCount = 1;
  const data: Buffer[] = [];
  const dataIndex = new Map<string, number>();
  for (const [cidr, record] of Object.entries(networks)) {
    const { bits, prefix } = bitsOf(cidr);
    let node = 0;
    for (let depth = 0; depth < prefix - 1; depth++) {
      const slot = node * 2 + bits[depth];
      if (records[slot] >= 0) node = records[slot];
      else {
        if (records[slot] !== EMPTY) throw new Error(`${cidr} overlaps another network`);
        if ((nodeCount + 1) * 2 > records.length) {
          const grown = new Int32Array(records.length * 2).fill(EMPTY);
          grown.set(records);
          records = grown;
        }
        records[slot] = nodeCount;
        node = nodeCount++;
      }
    }
    const key = JSON.stringify(record);
    let index = dataIndex.get(key);
    if (index === undefined) {
      index = data.length;
      data.push(encode(record));
      dataIndex.set(key, index);
    }
    records[node * 2 + bits[prefix - 1]] = DATA - index;
  }
  const offsets: number[] = [];
  let offset = 0;
  for (const item of data) {
    offsets.push(offset);
    offset += item.length;
  }
  const tree = Buffer.alloc(nodeCount * 8);
  for (let i = 0; i < nodeCount * 2; i++) {
    const value = records[i];
    tree.writeUInt32BE(
      value === EMPTY ? nodeCount : value >= 0 ? value : nodeCount + 16 + offsets[DATA - value],
      i * 4,
    );
  }
  const metadata = encode({
    node_count: nodeCount,
    record_size: 32,
    ip_version: 6,
    database_type: options.databaseType,
    languages: ["en"],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: options.buildEpoch ?? Math.floor(Date.now() / 1000),
    description: { en: options.description ?? `${options.databaseType} written for tests` },
  });
  return Buffer.concat([
    tree,
    Buffer.alloc(16),
    ...data,
    Buffer.from([0xab, 0xcd, 0xef]),
    Buffer.from("MaxMind.com"),
    metadata,
  ]);
}
