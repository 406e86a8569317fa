/** A small read-only table inside a details panel: a heading row, the first cell of each row its header. */
import type { ComponentChildren } from "preact";
import { ScrollArea } from "./scroll-area.tsx";

export function SimpleTable({
  label,
  headings,
  rows,
  empty,
}: {
  label: string;
  headings: string[];
  rows: ComponentChildren[][];
  empty: string;
}) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <ScrollArea label={label}>
      <table class="compact">
        <thead>
          <tr>
            {headings.map((heading) => (
              <th key={heading} scope="col">
                {heading}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map(([first, ...rest], index) => (
            <tr key={index}>
              <th scope="row">{first}</th>
              {rest.map((cell, column) => (
                <td key={headings[column + 1]}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollArea>
  );
}
