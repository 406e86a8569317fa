/**
 * A modal details panel on the native <dialog>: it traps focus, closes on Escape, and hands focus back
 * to the row that opened it.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

export function Dialog({
  title,
  onClose,
  children,
}: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement as HTMLElement | null;
    dialog.showModal();
    return () => {
      if (dialog.open) dialog.close();
      opener?.focus();
    };
  }, []);
  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: Escape closes a dialog natively; the backdrop click is the mouse's twin of it
    <dialog
      ref={ref}
      class="details"
      aria-labelledby="dialog-title"
      onClose={onClose}
      onClick={(event) => {
        // A click on the backdrop (the dialog element itself, outside its content) closes it.
        if (event.target === ref.current) onClose();
      }}
    >
      <div class="details-body">
        <header class="details-head">
          <h2 id="dialog-title">{title}</h2>
          <button type="button" class="close" onClick={onClose} aria-label="Close details">
            ×
          </button>
        </header>
        {children}
      </div>
    </dialog>
  );
}
