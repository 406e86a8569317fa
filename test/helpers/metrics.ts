/** Reading a /metrics scrape in tests. */

/** The value of one sample line (`name{labels} value`), or undefined when the scrape has none. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
