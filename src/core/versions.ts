/**
 * Version order for CPE ranges: versions are compared segment by segment, numbers numerically.
 * Letters after a number are post-release suffixes (OpenSSL "1.0.2k" > "1.0.2", OpenSSH "8.9p1" >
 * "8.9"), except the pre-release words, which sort before the release ("2.0rc1" < "2.0").
 */

type Segment = number | string;

const PRE_RELEASE: Record<string, number> = {
  dev: 0,
  snapshot: 0,
  alpha: 1,
  beta: 2,
  pre: 3,
  preview: 3,
  rc: 4,
};

export function versionSegments(version: string): Segment[] {
  const text = version
    .trim()
    .toLowerCase()
    .replace(/^v(?=\d)/, "");
  return Array.from(text.matchAll(/\d+|[a-z]+/g), ([part]) => (/^\d/.test(part) ? Number(part) : part));
}

const isPreRelease = (segment: Segment) => typeof segment === "string" && segment in PRE_RELEASE;

/** What a segment that the other version lacks means: 0 is no difference, pre-releases sort first. */
function againstMissing(segment: Segment): number {
  if (typeof segment === "number") return segment === 0 ? 0 : 1;
  return isPreRelease(segment) ? -1 : 1;
}

/** Negative when a < b, zero when equal, positive when a > b. */
export function compareVersions(a: string, b: string): number {
  const left = versionSegments(a);
  const right = versionSegments(b);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const x = left[i];
    const y = right[i];
    let order: number;
    if (x === undefined) order = -againstMissing(y);
    else if (y === undefined) order = againstMissing(x);
    else if (typeof x === "number" && typeof y === "number") order = x - y;
    // A number where the other has letters: the letters are a pre-release or an older suffix.
    else if (typeof x === "number") order = 1;
    else if (typeof y === "number") order = -1;
    else if (isPreRelease(x) || isPreRelease(y)) {
      order = (isPreRelease(x) ? PRE_RELEASE[x] : 99) - (isPreRelease(y) ? PRE_RELEASE[y] : 99);
    } else order = x < y ? -1 : x > y ? 1 : 0;
    if (order !== 0) return Math.sign(order);
  }
  return 0;
}

/** A version precise enough to look CVEs up by: at least major.minor. */
export function isPreciseVersion(version: string | undefined): boolean {
  return !!version && /^v?\d+\.\d+/i.test(version.trim());
}
