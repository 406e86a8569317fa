/**
 * Two small SVG charts — horizontal bars and lines over runs — with their numbers also given as text
 * (the accessible name), so nothing is only a picture. The panel around a chart gives its visible title.
 */

export interface Bar {
  label: string;
  value: number;
  /** A CSS class that colours the bar (e.g. severity-1). */
  tone?: string;
}

const WIDTH = 640;
const LABEL_WIDTH = 210;
const ROW = 30;

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

export function BarChart({ title, bars, unit }: { title: string; bars: Bar[]; unit: string }) {
  const max = Math.max(1, ...bars.map((bar) => bar.value));
  const height = bars.length * ROW + 8;
  const span = WIDTH - LABEL_WIDTH - 70;
  const summary = bars.map((bar) => `${bar.label}: ${bar.value} ${unit}`).join("; ");
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${height}`} role="img" aria-label={`${title}. ${summary}.`}>
        {bars.map((bar, index) => {
          const y = index * ROW + 4;
          const width = Math.max(bar.value > 0 ? 2 : 0, (bar.value / max) * span);
          return (
            <g key={bar.label}>
              <title>{`${bar.label}: ${bar.value} ${unit}`}</title>
              <text
                x={LABEL_WIDTH - 8}
                y={y + ROW / 2}
                class="chart-label"
                text-anchor="end"
                dominant-baseline="middle"
              >
                {truncate(bar.label, 28)}
              </text>
              <rect
                x={LABEL_WIDTH}
                y={y + 4}
                width={width}
                height={ROW - 10}
                rx="3"
                class={`bar ${bar.tone ?? ""}`}
              />
              <text
                x={LABEL_WIDTH + width + 6}
                y={y + ROW / 2}
                class="chart-value"
                dominant-baseline="middle"
              >
                {bar.value.toLocaleString("en")}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

export interface Series {
  name: string;
  values: number[];
}

const LINE_HEIGHT = 240;
const PAD = { left: 48, right: 32, top: 12, bottom: 36 };

/** Rounds the top of the axis up to 1, 2 or 5 times a power of ten. */
function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return ([1, 2, 5, 10].find((step) => step * power >= value) ?? 10) * power;
}

export function LineChart({ title, labels, series }: { title: string; labels: string[]; series: Series[] }) {
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = LINE_HEIGHT - PAD.top - PAD.bottom;
  const x = (index: number) =>
    PAD.left + (labels.length <= 1 ? plotWidth / 2 : (index / (labels.length - 1)) * plotWidth);
  const y = (value: number) => PAD.top + plotHeight - (value / max) * plotHeight;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(f * max));
  const every = Math.max(1, Math.ceil(labels.length / 8));
  const summary = series.map((s) => `${s.name}: ${s.values.join(", ")}`).join("; ");
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${LINE_HEIGHT}`}
        role="img"
        aria-label={`${title}, oldest run first. ${summary}.`}
      >
        {ticks.map((tick) => (
          <g key={tick}>
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(tick)} y2={y(tick)} class="grid" />
            <text
              x={PAD.left - 6}
              y={y(tick)}
              class="chart-label"
              text-anchor="end"
              dominant-baseline="middle"
            >
              {tick.toLocaleString("en")}
            </text>
          </g>
        ))}
        {labels.map((label, index) =>
          index % every === 0 || index === labels.length - 1 ? (
            <text key={label} x={x(index)} y={LINE_HEIGHT - 12} class="chart-label" text-anchor="middle">
              {truncate(label, 12)}
            </text>
          ) : null,
        )}
        {series.map((s, seriesIndex) => (
          <g key={s.name} class={`series series-${seriesIndex % 6}`}>
            <polyline
              fill="none"
              points={s.values.map((value, index) => `${x(index)},${y(value)}`).join(" ")}
            />
            {s.values.map((value, index) => (
              <circle key={labels[index]} cx={x(index)} cy={y(value)} r="3.5">
                <title>{`${s.name}, ${labels[index]}: ${value}`}</title>
              </circle>
            ))}
          </g>
        ))}
      </svg>
      <ul class="legend">
        {series.map((s, index) => (
          <li key={s.name}>
            <span class={`swatch series-${index % 6}`} aria-hidden="true" />
            {s.name}
          </li>
        ))}
      </ul>
    </figure>
  );
}
