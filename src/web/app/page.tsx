/**
 * A page's frame: its title in the tab and as the heading that takes focus when the page opens, so a
 * screen reader hears where a link led.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

/** The first page of a visit keeps the browser's own focus (so Tab reaches the skip link first). */
let firstPage = true;

export function Page({
  title,
  heading,
  children,
}: {
  title: string;
  heading?: ComponentChildren;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} — Sightline`;
    if (firstPage) firstPage = false;
    else ref.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <>
      <h1 ref={ref} tabIndex={-1}>
        {heading ?? title}
      </h1>
      {children}
    </>
  );
}
