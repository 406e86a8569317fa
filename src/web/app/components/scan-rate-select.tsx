/** The scan-rate choice, the same on creation and in a collection's settings. */
import { SCAN_RATE_LABELS, SCAN_RATES } from "../model.ts";

export function ScanRateSelect({
  id,
  value,
  onChange,
}: {
  id: string;
  value: string;
  onChange: (rate: string) => void;
}) {
  return (
    <select id={id} value={value} onChange={(event) => onChange((event.target as HTMLSelectElement).value)}>
      {SCAN_RATES.map((rate) => (
        <option key={rate} value={rate}>
          {SCAN_RATE_LABELS[rate]}
        </option>
      ))}
    </select>
  );
}
