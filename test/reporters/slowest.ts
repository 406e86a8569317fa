// A node:test reporter that prints the slowest test files when the run ends, so the suite's time can be
// read from any `npm test`. Use beside another reporter:
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./test/reporters/slowest.ts --test-reporter-destination=stderr "test/**/*.test.ts"
// SIGHTLINE_TEST_SLOWEST sets how many files are listed (default 20). A file's figure is the time its own
// process reports (its tests and hooks); the start-up of the process and the loading of its imports is not
// in it.

interface ReporterEvent {
  type: string;
  data?: { file?: string; nesting?: number; duration_ms?: number; details?: { duration_ms?: number } };
}

const listed = Number(process.env.SIGHTLINE_TEST_SLOWEST ?? 20);

export default async function* slowest(source: AsyncIterable<ReporterEvent>): AsyncGenerator<string> {
  // A file's own summary (its wall time, start-up included) wins over the sum of its top-level tests.
  const summaries = new Map<string, number>();
  const topLevelSums = new Map<string, number>();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    if (event.type === "test:summary" && typeof event.data?.duration_ms === "number") {
      summaries.set(file, event.data.duration_ms);
    } else if ((event.type === "test:pass" || event.type === "test:fail") && event.data?.nesting === 0) {
      topLevelSums.set(file, (topLevelSums.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  const durations = new Map(topLevelSums);
  for (const [file, ms] of summaries) durations.set(file, ms);
  const rows = [...durations].sort((a, b) => b[1] - a[1]).slice(0, listed);
  const cwd = `${process.cwd()}/`;
  yield `\nslowest ${rows.length} test files (seconds):\n`;
  for (const [file, ms] of rows) {
    yield `${(ms / 1000).toFixed(1).padStart(8)}  ${file.startsWith(cwd) ? file.slice(cwd.length) : file}\n`;
  }
}
