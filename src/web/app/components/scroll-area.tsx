/** A horizontally scrolling area (wide tables, graphs) that keyboard users can focus and scroll. */
import type { ComponentChildren } from "preact";

export function ScrollArea({
  label,
  labelledBy,
  class: extra,
  children,
}: {
  label?: string;
  labelledBy?: string;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <section
      class={`table-scroll ${extra ?? ""}`}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable area must be reachable by keyboard to scroll it
      tabIndex={0}
      aria-label={label}
      aria-labelledby={labelledBy}
    >
      {children}
    </section>
  );
}
