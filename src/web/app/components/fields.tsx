/** Any JSON value shown as readable fields: scalars as text, lists as lists, objects as nested fields. */
import type { ComponentChildren } from "preact";
import { readableNumbers } from "../../../core/formats.ts";
import { cellText, fieldLabel, severityName } from "../format.ts";

export function Value({ value }: { value: unknown }): ComponentChildren {
  if (value === null || value === undefined || value === "") return <span class="muted">—</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">none</span>;
    return (
      <ul class="values">
        {value.map((item, index) => (
          <li key={index}>
            <Value value={item} />
          </li>
        ))}
      </ul>
    );
  }
  if (typeof value === "object") return <Fields data={value as Record<string, unknown>} />;
  if (typeof value === "string" && /^https?:\/\/\S+$/.test(value)) {
    return (
      <a href={value} target="_blank" rel="noopener noreferrer">
        {value}
      </a>
    );
  }
  return <span class="value">{cellText(value)}</span>;
}

/** People read 443 and "1 (critical)", never the wire's "0.443e3" and "0.1e1". */
function readable(key: string, value: unknown): unknown {
  const plain = readableNumbers(value, key);
  return key === "severity" && typeof plain === "number" ? `${plain} (${severityName(plain)})` : plain;
}

/** Every field of an object except those already shown elsewhere. */
export function Fields({ data, skip = [] }: { data: Record<string, unknown>; skip?: string[] }) {
  const entries = Object.entries(data).filter(([key]) => !skip.includes(key));
  if (entries.length === 0) return <span class="muted">none</span>;
  return (
    <dl class="fields">
      {entries.map(([key, value]) => (
        <div key={key} class="field">
          <dt>{fieldLabel(key)}</dt>
          <dd>
            <Value value={readable(key, value)} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="details-section">
      <h3>{title}</h3>
      {children}
    </section>
  );
}
